/**
 * The browser's side of a Stop, explored: fast-check generates what tabs of one chat do —
 * send a message (a `gen`, an ordinary push), press Stop on an answer (a durable intent in the
 * shared outbox), leave the chat (its outbox goes to the page's courier) and open it again,
 * tell the other tabs that the stored list changed (the `storage` event: they adopt and send
 * its Stops at once) — and what the network does: go down and come back, and "a 2xx arrives
 * that is not the app's" (a captive portal's 200 page, an SSO page behind a redirect) for the
 * next few requests. Every request waits in fast-check's scheduler, which delivers them in the
 * order it picks: the courier and other tabs reorder intents, so a Stop can reach the app
 * before the `gen` it names. The app is a small in-memory log that refuses a Stop naming an
 * id it does not hold with 422 invalid_reference, as the chat's admission does.
 *
 * Invariant (after the commands, once the network is up and the requests are delivered):
 *   a Stop pressed while its run is open is never finally refused: every Stop whose answer
 *   reached the log is in the log, after it.
 * A failure prints its seed; replay with FC_SEED=… (and FC_PATH=…).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { createSessionStore, startOutboxCourier, type SessionStore } from '@/lib/a2/react'
import type { A2Event } from '@/lib/a2'

const RUNS = Number(process.env.FC_RUNS ?? 300)
const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : process.env.FC_EXPLORE ? undefined : 20261203
const PATH = process.env.FC_PATH
const TABS = 2

type Command =
  | { kind: 'send'; tab: number }
  | { kind: 'stop'; tab: number; which: number }
  | { kind: 'leave'; tab: number }
  | { kind: 'open'; tab: number }
  | { kind: 'storageEvent' }
  | { kind: 'down' }
  | { kind: 'up' }
  | { kind: 'notTheApp'; answers: number; how: 'portal' | 'redirect' }

const tab = fc.nat(TABS - 1)
const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('send' as const), tab }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('stop' as const), tab, which: fc.nat(8) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('leave' as const), tab }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('open' as const), tab }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('storageEvent' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('down' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('up' as const) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('notTheApp' as const),
      answers: fc.integer({ min: 1, max: 3 }),
      how: fc.constantFrom('portal', 'redirect'),
    }),
  },
)
/** Each command, then how many requests the network delivers before the next one. */
const plan = fc.array(fc.record({ command, deliver: fc.nat(3) }), { minLength: 1, maxLength: 25 })

function memoryStorage() {
  const items = new Map<string, string>()
  return {
    items,
    get length() {
      return items.size
    },
    key: (i: number) => [...items.keys()][i] ?? null,
    getItem: (k: string) => items.get(k) ?? null,
    setItem: (k: string, v: string) => void items.set(k, v),
    removeItem: (k: string) => void items.delete(k),
  }
}

/** The app's push route over an in-memory log: ids are idempotent; a Stop must name a `gen` already in the log. */
function appLog() {
  const log: A2Event[] = []
  const refusedEarly: string[] = []
  const answer = (body: { id: string; type: string; payload: unknown }): Response => {
    const existing = log.find((e) => e.id === body.id)
    if (existing) return Response.json({ events: [existing], duplicate: true }, { status: 200 })
    const of = (body.payload as { of?: string }).of
    if (of !== undefined && !log.some((e) => e.id === of && e.type === 'gen')) {
      refusedEarly.push(body.id)
      return Response.json({ error: { code: 'invalid_reference', message: 'cancelled.of must name an answer in this chat' } }, { status: 422 })
    }
    const event: A2Event = {
      id: body.id,
      sessionId: 's',
      index: log.length,
      type: body.type,
      payload: body.payload,
      createdAt: new Date().toISOString(),
    }
    log.push(event)
    return Response.json({ events: [event], duplicate: false }, { status: 201 })
  }
  return { log, refusedEarly, answer }
}

describe('a Stop through tabs, the courier and networks that are not the app', () => {
  let windowBefore: unknown
  beforeAll(() => {
    windowBefore = (globalThis as { window?: unknown }).window
  })
  afterAll(() => {
    ;(globalThis as { window?: unknown }).window = windowBefore
  })

  it('never finally refuses a Stop pressed while its run is open, whatever order its requests arrive in', async () => {
    /** How often a fixed seed reaches each new state. */
    const reached = { runs: 0, storageEvents: 0, notTheAppAnswers: 0, stopBeforeItsAnswer: 0, courierSends: 0, adoptedStops: 0 }
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), plan, async (scheduler, steps) => {
        reached.runs++
        const fakeWindow = new EventTarget()
        ;(globalThis as { window?: unknown }).window = fakeWindow
        const fakeStorage = memoryStorage()
        /**
         * The browser tells the other tabs of every change to the stored list (the `storage`
         * event), each in its own time: the scheduler delivers it, in the order it picks.
         */
        const storage = {
          ...fakeStorage,
          get length() {
            return fakeStorage.length
          },
          setItem(k: string, v: string) {
            fakeStorage.setItem(k, v)
            void scheduler.schedule(Promise.resolve(), `storage event for ${v.length} bytes`).then(() => {
              reached.storageEvents++
              fakeWindow.dispatchEvent(Object.assign(new Event('storage'), { key: k }))
            })
          },
        }
        const app = appLog()
        let down = false
        let notTheApp: { left: number; how: 'portal' | 'redirect' } = { left: 0, how: 'portal' }
        /** One network for every tab and the courier: each request waits for the scheduler to deliver it. */
        const network = (who: string) =>
          (async (_url: string, init: RequestInit) => {
            const body = JSON.parse(String(init.body)) as { id: string; type: string; payload: unknown }
            await scheduler.schedule(Promise.resolve(), `${who} sends ${body.id}`)
            if (who === 'courier') reached.courierSends++
            if (down) throw new TypeError('Failed to fetch')
            if (notTheApp.left > 0) {
              notTheApp.left--
              reached.notTheAppAnswers++
              // What fetch hands over after following an SSO redirect is the login page itself.
              return new Response(notTheApp.how === 'portal' ? '<html>Accept the terms</html>' : '<html><form>Sign in</form></html>', {
                status: 200,
                headers: { 'content-type': 'text/html' },
              })
            }
            return app.answer(body)
          }) as unknown as typeof fetch

        const tabs: Array<SessionStore<unknown>> = []
        const open: boolean[] = []
        const sent: string[][] = []
        const pressed: Array<{ id: string; of: string }> = []
        for (let t = 0; t < TABS; t++) {
          tabs.push(
            createSessionStore<unknown>({
              sessionId: 's',
              reducer: (s) => s,
              initial: null,
              fetch: network(`tab${t}`),
              retryDelaysMs: [1, 2, 3],
              durableTypes: ['stop'],
              storage,
            }),
          )
          tabs[t].connect()
          open.push(true)
          sent.push([])
        }
        const halt = startOutboxCourier({ fetch: network('courier'), storage, retryDelaysMs: [2] })
        let n = 0
        let gensInFlight = 0
        /** One turn of the event loop: what the last command started reaches the network. */
        const turn = () => new Promise<void>((r) => setImmediate(r))
        try {
          for (const { command: cmd, deliver } of steps) {
            switch (cmd.kind) {
              case 'send': {
                if (!open[cmd.tab]) break // a chat left is not on screen: nothing to press
                const id = `g${++n}`
                sent[cmd.tab].push(id)
                gensInFlight++
                void tabs[cmd.tab]
                  .push({ id, type: 'gen', payload: {} })
                  .catch(() => {})
                  .finally(() => gensInFlight--)
                break
              }
              case 'stop': {
                const mine = sent[cmd.tab]
                if (mine.length === 0 || !open[cmd.tab]) break
                const of = mine[cmd.which % mine.length]
                const id = `s${++n}`
                pressed.push({ id, of })
                void tabs[cmd.tab].push({ id, type: 'stop', payload: { of } }).catch(() => {})
                break
              }
              case 'leave':
                if (open[cmd.tab]) tabs[cmd.tab].close()
                open[cmd.tab] = false
                break
              case 'open':
                if (!open[cmd.tab]) tabs[cmd.tab].connect()
                open[cmd.tab] = true
                break
              case 'storageEvent': {
                const before = fakeStorage.items.get('a2.outbox:/api/sessions/s/events')
                if (before) reached.adoptedStops += (JSON.parse(before) as unknown[]).length
                fakeWindow.dispatchEvent(Object.assign(new Event('storage'), { key: 'a2.outbox:/api/sessions/s/events' }))
                break
              }
              case 'down':
                down = true
                break
              case 'up':
                down = false
                break
              case 'notTheApp':
                notTheApp = { left: cmd.answers, how: cmd.how }
                break
            }
            await turn()
            for (let i = 0; i < deliver && scheduler.count() > 0; i++) {
              await scheduler.waitOne()
              await turn()
            }
          }
          // The network comes back for good; requests are delivered (in the scheduler's order) until every
          // Stop whose answer reached the log is in it too.
          down = false
          notTheApp = { left: 0, how: 'portal' }
          const stopsDue = () => pressed.filter((p) => app.log.some((e) => e.id === p.of))
          const delivered = () => gensInFlight === 0 && stopsDue().every((p) => app.log.some((e) => e.id === p.id))
          const deadline = Date.now() + 5_000
          while (!delivered() && Date.now() < deadline) {
            // Nothing waiting: a retry timer is due (1–3 ms), or an answer is still being taken in;
            // the loop turns (timers fire between turns) until what it sends waits in the scheduler.
            if (scheduler.count() > 0) await scheduler.waitOne()
            else await turn()
          }
          reached.stopBeforeItsAnswer += pressed.filter((p) => app.refusedEarly.includes(p.id)).length
          const lost = stopsDue().filter((p) => !app.log.some((e) => e.id === p.id))
          expect({ lost, log: app.log.map((e) => e.id) }).toEqual({ lost: [], log: app.log.map((e) => e.id) })
          // ...and each after the answer it names.
          for (const p of stopsDue()) expect(app.log.findIndex((e) => e.id === p.id)).toBeGreaterThan(app.log.findIndex((e) => e.id === p.of))
        } finally {
          halt()
          for (const store of tabs) store.close()
          // Requests still waiting are delivered into a closed world; what a closed store still holds waits forever, harmlessly.
          down = true
          while (scheduler.count() > 0) await scheduler.waitOne()
        }
      }),
      { numRuns: RUNS, seed: SEED, path: PATH, endOnFailure: true },
    )
    console.log(`[outbox-interleavings] reached: ${JSON.stringify(reached)}`)
    expect(reached.notTheAppAnswers).toBeGreaterThan(0)
    expect(reached.stopBeforeItsAnswer).toBeGreaterThan(0)
    expect(reached.courierSends).toBeGreaterThan(0)
  }, 120_000)
})
