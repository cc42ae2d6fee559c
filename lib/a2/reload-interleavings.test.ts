/**
 * A Stop, then a reload at once, explored: the page that comes back gets its first screen in
 * its HTML, folded by the server from the log as it was when the reload's request was served,
 * and the Stop's push is still on its way. fast-check's scheduler orders everything that can
 * race: the worker's chunks landing in the log, each page's tail delivering them, the Stop's
 * request landing, its answer reaching the old page (or never: the page is gone), the server
 * rendering the new page, and the new page taking over (the old one unloads).
 *
 * Invariants, on the new page:
 *   - what it paints before hydrating (its HTML, unless the outbox holds it: heldByOutbox) and
 *     every state it shows after never hold a chunk past the Stop's cut;
 *   - once its tail has the whole log, it shows exactly what the old page showed at the Stop.
 * A failure prints its seed; replay with FC_SEED=… (and FC_PATH=…).
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { createSessionStore, type SessionStore } from '@/lib/a2/react'
import { heldByOutbox, outboxKeyOf, type A2Event } from '@/lib/a2'

const RUNS = Number(process.env.FC_RUNS ?? 300)
const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : process.env.FC_EXPLORE ? undefined : 20261207
const PATH = process.env.FC_PATH
const CHUNKS = 6

/** What a page shows: the log indexes of the chunks on screen, and the Stop's cut once it has one. */
type View = { shown: number[]; cutAt?: number }
const reducer = (view: View, event: A2Event): View => {
  if (event.type === 'chunk') return view.cutAt === undefined ? { shown: [...view.shown, event.index] } : view
  const { lastSeenIndex } = event.payload as { lastSeenIndex: number }
  return { shown: view.shown.filter((i) => i <= lastSeenIndex), cutAt: lastSeenIndex }
}
const fold = (events: readonly A2Event[]) => events.reduce(reducer, { shown: [] })

function memoryStorage() {
  const items = new Map<string, string>()
  return {
    getItem: (k: string) => items.get(k) ?? null,
    setItem: (k: string, v: string) => void items.set(k, v),
    removeItem: (k: string) => void items.delete(k),
  }
}

describe('a Stop pressed just before a reload', () => {
  it('never shows the reloaded page past the cut, however the push, its answer, the render and the tails interleave', async () => {
    const reached = { runs: 0, renderedBeforeItLanded: 0, acknowledgedBeforeTakeover: 0, heldPaints: 0 }
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.integer({ min: 1, max: CHUNKS - 1 }), async (scheduler, seenBeforeStop) => {
        reached.runs++
        const storage = memoryStorage()
        const key = outboxKeyOf('s')
        const log: A2Event[] = []
        const append = (type: string, payload: unknown, id = `e${log.length}`) => {
          const event: A2Event = { id, sessionId: 's', index: log.length, type, payload, createdAt: new Date().toISOString() }
          log.push(event)
          return event
        }
        /** The app's push route: an id already in the log is answered with its event. */
        const answer = (body: { id: string; type: string; payload: unknown }) => {
          const landed = log.find((e) => e.id === body.id) ?? append(body.type, body.payload, body.id)
          return Response.json({ events: [landed] }, { status: landed.index === log.length - 1 ? 201 : 200 })
        }
        let oldPageGone = false
        /** A page's network: the request lands when the scheduler says, its answer arrives later (never, to a page gone). */
        const network = (page: 'old' | 'new') =>
          (async (_url: string, init: RequestInit) => {
            const body = JSON.parse(String(init.body)) as { id: string; type: string; payload: unknown }
            await scheduler.schedule(Promise.resolve(), `${page} page's ${body.id} lands`)
            const response = answer(body)
            await scheduler.schedule(Promise.resolve(), `answer to the ${page} page`)
            if (page === 'old' && oldPageGone) return new Promise<Response>(() => {})
            if (page === 'old') reached.acknowledgedBeforeTakeover++
            return response
          }) as unknown as typeof fetch
        const open = (page: 'old' | 'new', initial: View, after: number) =>
          createSessionStore<View>({ sessionId: 's', reducer, initial, after, fetch: network(page), durableTypes: ['cancelled'], storage })
        /** A page's tail: delivers the log's next event, each delivery when the scheduler says. */
        const tail = (store: SessionStore<View>, label: string) => {
          const next = async (): Promise<void> => {
            await scheduler.schedule(Promise.resolve(), label)
            const event = log[store.getSnapshot().lastSeenIndex + 1]
            if (event) store.receive([event])
            if (store.getSnapshot().lastSeenIndex < log.length - 1 || !done) return next()
          }
          return next()
        }
        let done = false

        // The answer streams; the old page has seen `seenBeforeStop` chunks of it when Stop is pressed.
        for (let i = 0; i < seenBeforeStop; i++) append('chunk', {})
        const old = open('old', fold(log), log.length - 1)
        old.connect()
        const worker = (async () => {
          for (let i = seenBeforeStop; i < CHUNKS; i++) {
            await scheduler.schedule(Promise.resolve(), `chunk ${i} lands`)
            append('chunk', {})
          }
        })()
        const oldTail = tail(old, 'old page tail')
        const seen = old.getSnapshot()
        void old.push({ id: 'stop', type: 'cancelled', payload: { lastSeenIndex: seen.lastSeenIndex } }).catch(() => {})

        // The reload: the server renders the page from the log as it is then; later the new page takes over.
        const violations: string[] = []
        const check = (where: string, view: View) => {
          const past = view.shown.filter((i) => i > seen.lastSeenIndex)
          if (past.length > 0) violations.push(`${where} shows chunks ${past.join(',')} past the cut at ${seen.lastSeenIndex}`)
        }
        let reloaded: SessionStore<View> | undefined
        const reload = (async () => {
          await scheduler.schedule(Promise.resolve(), 'the server renders the reloaded page')
          const html = { view: fold(log), after: log.length - 1 }
          if (!log.some((e) => e.id === 'stop')) reached.renderedBeforeItLanded++
          await scheduler.schedule(Promise.resolve(), 'the reloaded page takes over')
          oldPageGone = true
          old.close()
          if (heldByOutbox(storage.getItem(key), html.after)) reached.heldPaints++
          else check('the HTML painted before hydration', html.view)
          const page = open('new', html.view, html.after)
          reloaded = page
          check('the hydrated page', page.getSnapshot().state)
          page.subscribe(() => check('the page', page.getSnapshot().state))
          page.connect()
          return tail(page, 'new page tail')
        })()

        // Everything is delivered, in the scheduler's order, until the new page has the whole log.
        const settled = (async () => {
          await worker
          await scheduler.schedule(Promise.resolve(), 'the answer is over')
          done = true
        })()
        const turn = () => new Promise<void>((r) => setImmediate(r))
        const deadline = Date.now() + 5_000
        const finished = () =>
          done && reloaded !== undefined && log.some((e) => e.id === 'stop') && reloaded.getSnapshot().lastSeenIndex === log.length - 1
        while (!finished() && Date.now() < deadline) {
          if (scheduler.count() > 0) await scheduler.waitOne()
          else await turn()
        }
        expect(violations).toEqual([])
        expect(finished()).toBe(true)
        expect(reloaded!.getSnapshot().state).toEqual({ shown: seen.state.shown, cutAt: seen.lastSeenIndex })
        reloaded!.close()
        while (scheduler.count() > 0) await scheduler.waitOne()
        void oldTail
        void reload
        void settled
      }),
      { numRuns: RUNS, seed: SEED, path: PATH, endOnFailure: true },
    )
    console.log(`[reload-interleavings] reached: ${JSON.stringify(reached)}`)
    expect(reached.renderedBeforeItLanded).toBeGreaterThan(0)
    expect(reached.acknowledgedBeforeTakeover).toBeGreaterThan(0)
    expect(reached.heldPaints).toBeGreaterThan(0)
  }, 120_000)
})
