/**
 * Pushes that start and cancel runs, racing: fast-check generates batches of concurrent
 * pushes and server appends — start an answer, Stop one (an abortOn predicate), start and
 * Stop in one push, a reset (abortOn without a predicate), a retry of an earlier push — and
 * its scheduler interleaves their statements (the read a push makes before it appends, the
 * one-statement append, the transactional fallback's begin). On PGlite, and on Postgres when
 * TEST_DATABASE_URL is set. A failure prints its seed; replay with FC_SEED=… (and FC_PATH=…).
 *
 * A batch may also take the database away (test-kit/state-models/outage.ts: at its k-th statement in the
 * scheduler's order, that statement refused or its answer lost, every later one refused);
 * once the batch has settled the database comes back and the client pushes every errored
 * push again, same ids, as the browser's outbox does (DESIGN §10).
 *
 * Invariants, against a model folded from the final log (whatever order the races chose):
 *   1. the log is gapless, each id once;
 *   2. a run is cancelled exactly when an event after its own matches its abortOn, by the
 *      first such event (cancelled_by), with cancel_version 1;
 *   3. each cancel has its one CANCEL_APPENDED history row, carrying the same event;
 *   4. a retried push answers the events it first wrote (duplicate) and writes nothing;
 *   5. a push that errored in an outage wrote all of its events or none (and invariants 1-3
 *      hold of what it wrote); an acknowledged push's events are all in the log.
 *   6. a Stop pressed while its run is open is never finally refused: with the cap near (a run
 *      whose server caps the session at a few events, its chunks counting), a Stop refused
 *      `session_full` names a run some other event had already cancelled, never one still open.
 * And over the whole run: the stale fallback (a run opened between a push's read and its
 * append) was taken at least once, so it is explored, not assumed, and an outage failed
 * pushes that had written everything and pushes that had written nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { z } from 'zod'
import { defineContract, isA2Error } from '@/lib/a2'
import { consumer, createServer, type Store } from '@/lib/a2/server'
import { query } from './internal/store/store'
import { createTestDb, layers, type TestDb } from './test-kit/db'
import { interceptStore } from './test-kit/runtime'
import { OutageSwitch, outageStore, type Fault } from './test-kit/state-models/outage'

const RUNS = Number(process.env.FC_RUNS ?? 60)
const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : process.env.FC_EXPLORE ? undefined : 20261202
const PATH = process.env.FC_PATH

const contract = defineContract({
  events: {
    generate: { schema: z.object({}).strict(), push: true },
    cancelled: { schema: z.object({ of: z.string(), lastSeenIndex: z.number().int().min(-1) }), push: true },
    reset: { schema: z.object({}).strict(), push: true },
    /** A step of run `of` (a consumer's chunk): counts against the session's cap. */
    chunk: { schema: z.object({ of: z.string() }), stepOf: (p: { of: string }) => p.of },
  },
  maxPayloadBytes: 2048,
})

/** Stopped by the Stop that names it (a predicate); a second consumer of the same event, laned, stopped by any reset. */
const consumers = [
  consumer({ contract, name: 'answer', types: ['generate'], abortOn: { cancelled: (event, trigger) => event.payload.of === trigger.id } }).run(
    async () => {},
  ),
  consumer({ contract, name: 'sweep', types: ['generate'], lane: 'one', abortOn: ['reset'] }).run(async () => {}),
]

type Via = 'push' | 'append'
type Command =
  | { kind: 'start'; via: Via }
  | { kind: 'stop'; target: number; via: Via }
  | { kind: 'startAndStop' }
  | { kind: 'reset'; via: Via }
  | { kind: 'retry'; which: number }
  | { kind: 'chunk'; target: number }

const via = fc.constantFrom<Via>('push', 'append')
const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('start' as const), via }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('stop' as const), target: fc.nat(8), via }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('startAndStop' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reset' as const), via }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('retry' as const), which: fc.nat(8) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('chunk' as const), target: fc.nat(8) }) },
)
/** In one batch of four, the database goes away at one of the batch's first statements. */
const outage = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.record({ after: fc.nat(4), fault: fc.constantFrom<Fault>('refused', 'lost') }) },
)
const batches = fc.array(fc.record({ commands: fc.array(command, { minLength: 1, maxLength: 4 }), outage }), { minLength: 1, maxLength: 4 })
/** "The cap is near": in one run of two, the server caps the session at 3-10 events (a plan writes up to ~20), its chunks counting. */
const capNear = fc.oneof(fc.constant(undefined), fc.integer({ min: 3, max: 10 }))

interface JobRow {
  event_id: string
  consumer: string
  status: string
  cancel_version: number
  cancelled_by: { id: string; index: number; type: string } | null
  transitions: Array<{ reason: string; from_status: string; to_status: string; detail: { id: string } }> | null
}

describe.each(layers)('pushes racing on %s', (kind) => {
  let db: TestDb
  let store: Store
  beforeAll(async () => {
    db = await createTestDb(kind)
    store = await db.open({ max: 8 })
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('cancels exactly the runs a later event matches, whatever the interleaving, through the stale fallback too', async () => {
    let staleFallbacks = 0
    let session = 0
    /** How often the cap-near state was reached: Stops that landed past the cap, pushes it refused, Stops it refused (of runs already cancelled). */
    const cap = { runs: 0, stopsPastCap: 0, refusedPushes: 0, refusedStops: 0 }
    const errored = { wroteAll: 0, wroteNothing: 0 }
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), batches, capNear, async (scheduler, plan, maxEvents) => {
        const sessionId = `push-${kind}-${++session}`
        const owner = 'u'
        let appendsInFlight = 0
        let begins = 0
        const database = new OutageSwitch()
        const raced = interceptStore(outageStore(store, database), {
          before: async (text) => {
            if (text === 'begin') begins++
            await scheduler.schedule(Promise.resolve(), text.replace(/\s+/g, ' ').slice(0, 50))
          },
        })
        // Pushes pass the caps too, as the app's route does.
        const caps = maxEvents ? { maxEvents, maxPushedBytes: 1 << 30 } : undefined
        const server = createServer({ contract, consumers, store: raced, ...(caps ? { caps } : {}) })
        if (maxEvents) cap.runs++
        /** Pushes the cap refused (413, final): each Stop with whether the run it names had been acknowledged before it was pressed. */
        const refusedByCap: Array<{ id: string; stopOf?: string; runWasThere: boolean }> = []
        await server.sessions.create(owner, { id: sessionId })
        const started: string[] = []
        const pushed: Array<{ body: unknown; first: Promise<Array<{ id: string; index: number }>> }> = []
        /** Pushes (and server appends) an outage failed: the client sends each again once the database is back. */
        const outbox: Array<{ how: Via; events: Array<{ id: string; type: string; payload: unknown }> }> = []
        /** Every event some push was acknowledged for. */
        const acknowledged = new Set<string>()
        let n = 0
        const stopOf = (e: { type: string; payload: unknown }) => (e.type === 'cancelled' ? { stopOf: (e.payload as { of: string }).of } : {})
        /** Whether the run a Stop names was in the log, acknowledged, when the Stop was pressed (read at the refusal, after its send began). */
        const pressedWhenThere = new Map<string, boolean>()
        const runsThere = (e: { id: string }) => pressedWhenThere.get(e.id) ?? false
        const send = async (how: Via, events: Array<{ id: string; type: string; payload: unknown }>, again = false) => {
          appendsInFlight++
          try {
            let answer: Promise<Array<{ id: string; index: number }>>
            if (how === 'append') answer = server.append(sessionId, ...(events as never[]))
            else {
              // An admission that reads nothing of its own: the push's one read serves it.
              const body = events.length === 1 ? events[0] : { events }
              answer = server.push(sessionId, owner, body, { admit: async () => {}, caps }).then((r) => r.events)
              if (!again) pushed.push({ body, first: answer })
            }
            const written = await answer
            for (const e of events) acknowledged.add(e.id)
            return written
          } catch (error) {
            if (isA2Error(error, 'session_full') && how === 'push') {
              for (const e of events) refusedByCap.push({ id: e.id, ...stopOf(e), runWasThere: runsThere(e) })
              return []
            }
            if (!database.down) throw error
            outbox.push({ how, events })
            return []
          } finally {
            appendsInFlight--
          }
        }
        let outages = 0
        for (const { commands: batch, outage } of plan) {
          if (outage) {
            database.arm(outage.after, outage.fault)
            outages++
          }
          const running = batch.map((cmd) => {
            switch (cmd.kind) {
              case 'start': {
                const id = `g${++n}`
                started.push(id)
                return send(cmd.via, [{ id, type: 'generate', payload: {} }])
              }
              case 'stop': {
                const of = started[cmd.target % Math.max(1, started.length)] ?? 'nobody'
                const id = `c${++n}`
                pressedWhenThere.set(id, acknowledged.has(of))
                return send(cmd.via, [{ id, type: 'cancelled', payload: { of, lastSeenIndex: 0 } }])
              }
              case 'chunk': {
                // A consumer's step of a started run: refused once the run is stopped, or past the cap.
                const of = started[cmd.target % Math.max(1, started.length)] ?? 'nobody'
                return server.append(sessionId, { type: 'chunk', payload: { of } }).catch((error: unknown) => {
                  if (isA2Error(error, 'run_cancelled') || isA2Error(error, 'session_full') || database.down) return []
                  throw error
                })
              }
              case 'startAndStop': {
                const id = `g${++n}`
                started.push(id)
                return send('push', [
                  { id, type: 'generate', payload: {} },
                  { id: `c${++n}`, type: 'cancelled', payload: { of: id, lastSeenIndex: 0 } },
                ])
              }
              case 'reset':
                return send(cmd.via, [{ id: `r${++n}`, type: 'reset', payload: {} }])
              case 'retry': {
                const earlier = pushed[cmd.which % Math.max(1, pushed.length)]
                if (!earlier) return Promise.resolve([])
                return server.push(sessionId, owner, earlier.body, { admit: async () => {}, caps }).then(
                  async (again) => {
                    // 4: a retry answers what the first push wrote, as a duplicate (or lands first, and the first is the duplicate).
                    const first = await earlier.first.catch(() => undefined) // errored in an outage: its own retry checks it
                    if (first) expect(again.events.map((e) => [e.id, e.index])).toEqual(first.map((e) => [e.id, e.index]))
                    return again.events
                  },
                  (error) => {
                    if (isA2Error(error, 'session_full')) return [] // a retry of a push the cap refused, or that it refuses now
                    if (!database.down) throw error
                    return []
                  },
                )
              }
            }
          })
          await scheduler.waitFor(Promise.all(running))
          // The database comes back; first, what the outage left: each errored push wrote all of it or nothing.
          database.restore()
          const inLog = new Set(
            (await query<{ id: string }>(store.db, sql`select id from a2_events where session_id = ${sessionId}`)).map((e) => e.id),
          )
          for (const { events } of outbox) {
            const landed = events.filter((e) => inLog.has(e.id)).length
            // 5: all or nothing.
            expect({ push: events.map((e) => e.id), landed }).toEqual({ push: events.map((e) => e.id), landed: landed === 0 ? 0 : events.length })
            if (landed === 0) errored.wroteNothing++
            else errored.wroteAll++
          }
          // The outbox: every errored push again, same ids, now acknowledged.
          for (const retry of outbox.splice(0)) await scheduler.waitFor(send(retry.how, retry.events, true))
          expect(outbox).toEqual([])
        }
        expect(appendsInFlight).toBe(0)
        // Every transaction here is a stale fallback (nothing passes its own rows to commit with
        // the events); a begin the outage refused, or a retried one, is not: counted only without one.
        if (outages === 0) staleFallbacks += begins

        const log = await query<{ index: number; id: string; type: string; payload: { of?: string } }>(
          store.db,
          sql`select index, id, type, payload from a2_events where session_id = ${sessionId} order by index`,
        )
        const refusedIds = new Set(refusedByCap.filter((r) => !log.some((e) => e.id === r.id)).map((r) => r.id))
        // 5: every acknowledged event is in the log (a push the cap refused was not acknowledged, unless a retry of it landed).
        for (const id of refusedIds) acknowledged.delete(id)
        expect([...acknowledged].filter((id) => !log.some((e) => e.id === id))).toEqual([])
        // 1: gapless, each id once.
        expect(log.map((e) => e.index)).toEqual(log.map((_, i) => i))
        expect(new Set(log.map((e) => e.id)).size).toBe(log.length)
        const [{ head }] = await query<{ head: number }>(store.db, sql`select head from a2_sessions where id = ${sessionId}`)
        expect(head).toBe(log.length)

        // The model: each run's first matching later event.
        const expected = new Map<string, string | null>()
        for (const event of log) {
          if (event.type === 'generate') {
            expected.set(`answer:${event.id}`, null)
            expected.set(`sweep:${event.id}`, null)
          }
          const key = event.type === 'cancelled' ? `answer:${event.payload.of}` : undefined
          if (key && expected.get(key) === null) expected.set(key, event.id)
          if (event.type === 'reset') for (const [k, by] of expected) if (k.startsWith('sweep:') && by === null) expected.set(k, event.id)
        }
        const jobs = await query<JobRow>(
          store.db,
          sql`select j.event_id, j.consumer, j.status, j.cancel_version, j.cancelled_by,
                     (select jsonb_agg(jsonb_build_object('reason', t.reason, 'from_status', t.from_status, 'to_status', t.to_status, 'detail', t.detail) order by t.id)
                      from a2_job_transitions t where t.job_id = j.id) as transitions
              from a2_jobs j where j.session_id = ${sessionId}`,
        )
        expect(jobs.length).toBe(expected.size)
        // 6: a Stop pressed while its run was there and open is never finally refused by the cap:
        // a refused one names a run that some other event had cancelled first.
        for (const refused of refusedByCap.filter((r) => refusedIds.has(r.id))) {
          if (refused.stopOf === undefined) {
            cap.refusedPushes++
            continue
          }
          cap.refusedStops++
          if (!refused.runWasThere) continue
          const what = `Stop ${refused.id} of ${refused.stopOf} refused by the cap (${maxEvents}) in ${log.map((e) => e.id).join(' ')}`
          expect({ what, cancelledBy: expected.get(`answer:${refused.stopOf}`) ?? null }).toEqual({ what, cancelledBy: expect.any(String) })
        }
        if (maxEvents) cap.stopsPastCap += log.filter((e) => e.type === 'cancelled' && e.index >= maxEvents).length
        for (const job of jobs) {
          const by = expected.get(`${job.consumer}:${job.event_id}`)
          const what = `${job.consumer} run of ${job.event_id} in ${log.map((e) => `${e.id}${e.payload.of ? `(${e.payload.of})` : ''}`).join(' ')}`
          // 2: cancelled exactly by the first later event that matches it.
          expect({ what, status: job.status, by: job.cancelled_by?.id ?? null, version: job.cancel_version }).toEqual({
            what,
            status: by ? 'CANCELLING' : 'ACTIVE',
            by: by ?? null,
            version: by ? 1 : 0,
          })
          // 3: one history row per cancel, carrying the event that cancelled it.
          expect({ what, history: job.transitions ?? [] }).toEqual({
            what,
            history: by ? [{ reason: 'CANCEL_APPENDED', from_status: 'ACTIVE', to_status: 'CANCELLING', detail: job.cancelled_by }] : [],
          })
        }
      }),
      { numRuns: RUNS, seed: SEED, path: PATH, endOnFailure: true },
    )
    console.log(`[push-interleavings ${kind}] the cap is near: ${JSON.stringify(cap)} of ${RUNS} runs`)
    expect(cap.stopsPastCap).toBeGreaterThan(0) // the exemption is explored, not assumed
    expect(cap.refusedPushes).toBeGreaterThan(0)
    expect(staleFallbacks).toBeGreaterThan(0)
    expect(errored.wroteAll).toBeGreaterThan(0)
    expect(errored.wroteNothing).toBeGreaterThan(0)
  }, 300_000)

  it('stops a run in one statement after the read its admission uses', async () => {
    const statements: string[] = []
    const counted = interceptStore(store, { before: async (text) => void statements.push(text.replace(/\s+/g, ' ').slice(0, 100)) })
    const server = createServer({ contract, consumers, store: counted })
    const { id: sessionId } = await server.sessions.create('u')
    await server.push(sessionId, 'u', { id: 'g', type: 'generate', payload: {} }, { admit: async () => {} })
    statements.length = 0
    let found: unknown
    const { events } = await server.push(
      sessionId,
      'u',
      { id: 'c', type: 'cancelled', payload: { of: 'g', lastSeenIndex: 0 } },
      { refersTo: () => ['g'], admit: async (_inputs, seen) => void (found = seen) },
    )
    expect(events.map((e) => [e.id, e.index])).toEqual([['c', 1]])
    expect(statements).toEqual([expect.stringMatching(/^select s\.owner, s\.head/), expect.stringMatching(/a2_push\(/)])
    // The admission saw the answer it stops, and it running, from that one read.
    expect(found).toMatchObject({
      events: [{ id: 'g', type: 'generate' }],
      running: [
        { eventId: 'g', consumer: 'answer' },
        { eventId: 'g', consumer: 'sweep' },
      ],
    })
    const [job] = await query<{ status: string }>(store.db, sql`select status from a2_jobs where session_id = ${sessionId} and consumer = 'answer'`)
    expect(job.status).toBe('CANCELLING')
  })
})
