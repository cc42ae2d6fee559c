/**
 * Runs that end together end in one statement (endRun's group commit and endRuns, in
 * internal/runtime/end-runs.ts), on PGlite and on Postgres — and each is still its own compare-and-set:
 *   - a worker's runs that end in one turn share one statement;
 *   - model-based (fast-check, seeded): any batch of endings over runs in any state —
 *     held, superseded, already settled, CANCELLING, with effects DISPATCHED or UNKNOWN —
 *     does to each run exactly what the one-run rules say, and answers each request with
 *     its own outcome;
 *   - on Postgres, batches over the same runs sent at once, in any request order, lanes
 *     included: each run ends once, by one of them, with one transition, and no deadlock
 *     (rows are locked in id order).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { consumer, createServer, type A2Server, type Store } from '@/lib/a2/server'
import { endRuns, RETURNED, stopped, type EndRule, type EndRequest } from './internal/runtime/end-runs'
import { query } from './internal/store/store'
import type { RunStatus } from './internal/core/transitions'
import { createTestDb, layers, type TestDb } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'
import { gate, historyOf, interceptStore, quarantineOpenJobs, waitForJob, waitUntil } from './test-kit/runtime'

const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : 20261201
const RUNS = Number(process.env.FC_RUNS ?? 40)

const RULES: Record<string, EndRule> = {
  returned: RETURNED,
  stopped: stopped(),
  exhausted: { ACTIVE: { to: 'FAILED', reason: 'ATTEMPTS_EXHAUSTED' }, CANCELLING: { to: 'CANCELLED', reason: 'RETRY_REVOKED' } },
}

const isFinish = (text: string) => text.includes('jsonb_to_recordset') && text.includes('moved as (')

describe.each(layers)('run endings in one statement on %s', (kind) => {
  let testDb: TestDb
  let store: Store
  let n = 0
  const servers: A2Server<typeof chat>[] = []
  beforeAll(async () => {
    testDb = await createTestDb(kind)
    store = await testDb.open()
  })
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.stopWorkers({ graceMs: 1_000 })))
    await quarantineOpenJobs(store)
  })
  afterAll(async () => {
    await testDb.drop()
  })

  /** A consumer no worker runs (the test sets each job's state), `count` jobs of it in one session. */
  async function jobs(count: number, options: { lane?: string; sessions?: number } = {}) {
    const name = `fin${++n}`
    const c = consumer({ contract: chat, name, types: ['generate'], lane: options.lane, maxAttempts: 3 }).run(async () => {})
    const server = createServer({ contract: chat, consumers: [c], store })
    const ids: number[] = []
    for (let s = 0; s < (options.sessions ?? 1); s++) {
      const { id: sessionId } = await server.sessions.create('u')
      await server.append(sessionId, ...Array.from({ length: count }, () => ({ type: 'generate' as const, payload: {} })))
      const rows = await query<{ id: number }>(
        store.db,
        sql`select id from a2_jobs where consumer = ${name} and session_id = ${sessionId} order by event_index`,
      )
      ids.push(...rows.map((r) => Number(r.id)))
    }
    return { name, ids }
  }

  /**
   * Eight no-op runs appended before a worker on `on` starts (its first claim takes all eight,
   * and they end in one turn); each must complete in its first attempt within `timeoutMs`.
   */
  async function eightEndInOneTurn(on: Store, timeoutMs?: number): Promise<void> {
    const name = `fin${++n}`
    const c = consumer({ contract: chat, name, types: ['generate'] }).run(async () => {})
    const server = createServer({ contract: chat, consumers: [c], store: on })
    servers.push(server)
    const { id: sessionId } = await server.sessions.create('u')
    const events = await server.append(sessionId, ...Array.from({ length: 8 }, () => ({ type: 'generate' as const, payload: {} })))
    await server.startWorker({ pollMs: 50 })
    for (const e of events) {
      const job = await waitForJob(store, e.id, name, (j) => j.status === 'COMPLETED', timeoutMs)
      expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>COMPLETED:RETURNED'])
    }
  }

  it('the runs a worker ends in one turn share one statement, each with its own transition', async () => {
    let finishes = 0
    const counted = interceptStore(store, { before: (text) => void (isFinish(text) && finishes++) })
    await eightEndInOneTurn(counted)
    expect(finishes).toBeGreaterThan(0)
    expect(finishes).toBeLessThanOrEqual(2) // one per run before: 8
  })

  it('a batch the database rolls back as a deadlock is asked again run by run: each run ends once, at once', async () => {
    let finishes = 0
    // The driver's error as drizzle hands it on: its own error with the database's as its cause.
    const deadlock = () =>
      new Error('Failed query: (a endRuns batch)', { cause: Object.assign(new Error('deadlock detected'), { code: '40P01', severity: 'ERROR' }) })
    const failing = interceptStore(store, {
      before: (text) => {
        if (isFinish(text) && finishes++ === 0) throw deadlock()
      },
    })
    // Well inside the 15 s lease: nothing waits for a takeover.
    await eightEndInOneTurn(failing, 5_000)
    expect(finishes).toBeGreaterThan(1)
  })

  it('one statement, each request fenced on its own: held, superseded, settled, CANCELLING, effect in flight', async () => {
    const { ids } = await jobs(5)
    const [held, superseded, settled, cancelling, inFlight] = ids
    const set = (id: number, status: RunStatus, attempt: number) =>
      query(
        store.db,
        sql`update a2_jobs set status = ${status}, attempt = ${attempt}, owner = 'w', lease_until = now() + interval '1 hour' where id = ${id}`,
      )
    await set(held, 'ACTIVE', 1)
    await set(superseded, 'ACTIVE', 2)
    await set(settled, 'COMPLETED', 1)
    await set(cancelling, 'CANCELLING', 1)
    await set(inFlight, 'ACTIVE', 1)
    await query(store.db, sql`insert into a2_effects (job_id, key, status, attempt, cancel_version) values (${inFlight}, 'k', 'DISPATCHED', 1, 0)`)
    const request = (jobId: number, detail?: unknown): EndRequest => ({ fence: { jobId, attempt: 1 }, rule: RULES.returned, detail })
    const results = await endRuns(store.db, [
      request(inFlight),
      request(superseded),
      request(held, { why: 'x' }),
      request(settled),
      request(cancelling),
    ])
    expect(results).toEqual(['UNKNOWN', undefined, 'COMPLETED', undefined, 'CANCELLED'])
    expect(await historyOf(store, held)).toEqual(['1:ACTIVE>COMPLETED:RETURNED'])
    expect(await historyOf(store, cancelling)).toEqual(['1:CANCELLING>CANCELLED:STOPPED_BY_CANCEL'])
    expect(await historyOf(store, inFlight)).toEqual(['1:ACTIVE>UNKNOWN:EFFECT_UNKNOWN'])
    expect(await historyOf(store, superseded)).toEqual([])
    expect(await historyOf(store, settled)).toEqual([])
    const [detail] = await query<{ detail: unknown }>(store.db, sql`select detail from a2_job_transitions where job_id = ${held}`)
    expect(detail.detail).toEqual({ why: 'x' })
    const rows = await query<{ id: number; status: string; attempt: number; owner: string | null }>(
      store.db,
      sql`select id, status, attempt, owner from a2_jobs where id in ${ids} order by id`,
    )
    expect(rows.map((r) => [r.status, r.attempt, r.owner])).toEqual([
      ['COMPLETED', 1, null],
      ['ACTIVE', 2, 'w'],
      ['COMPLETED', 1, 'w'],
      ['CANCELLED', 1, null],
      ['UNKNOWN', 1, null],
    ])
  })

  it('model: any batch of endings does to each run what the one-run rules say (seeded)', async () => {
    const state = fc.record({
      status: fc.constantFrom<RunStatus>('ACTIVE', 'CANCELLING', 'COMPLETED', 'CANCELLED', 'UNKNOWN'),
      attempt: fc.integer({ min: 1, max: 2 }),
      effect: fc.constantFrom('none', 'DISPATCHED', 'UNKNOWN', 'DONE'),
    })
    const req = fc.record({
      attempt: fc.integer({ min: 1, max: 2 }),
      rule: fc.constantFrom(...Object.keys(RULES)),
      detail: fc.option(fc.record({ code: fc.constantFrom('a', 'b') }), { nil: undefined }),
    })
    const scenario = fc
      .array(fc.record({ state, request: fc.option(req, { nil: undefined }) }), { minLength: 1, maxLength: 6 })
      .chain((runs) => fc.tuple(fc.constant(runs), fc.shuffledSubarray([...runs.keys()], { minLength: runs.length, maxLength: runs.length })))
    await fc.assert(
      fc.asyncProperty(scenario, async ([runs, order]) => {
        const { ids } = await jobs(runs.length)
        for (const [i, run] of runs.entries()) {
          await query(
            store.db,
            sql`update a2_jobs set status = ${run.state.status}, attempt = ${run.state.attempt}, owner = 'w', lease_until = now() + interval '1 hour'
                where id = ${ids[i]}`,
          )
          if (run.state.effect !== 'none') {
            await query(
              store.db,
              sql`insert into a2_effects (job_id, key, status, attempt, cancel_version) values (${ids[i]}, 'k', ${run.state.effect}, 1, 0)`,
            )
          }
        }
        const asked = order.filter((i) => runs[i].request)
        const requests = asked.map((i): EndRequest => {
          const r = runs[i].request!
          return { fence: { jobId: ids[i], attempt: r.attempt }, rule: RULES[r.rule], detail: r.detail }
        })
        const results = await endRuns(store.db, requests)

        // The one-run rules, applied to each run alone.
        const expected = new Map<number, { status: RunStatus; owner: string | null; transition?: unknown; result?: RunStatus }>()
        for (const [i, run] of runs.entries()) {
          const r = run.request
          const step = r && r.attempt === run.state.attempt ? RULES[r.rule][run.state.status] : undefined
          if (!r || !step) {
            expected.set(i, { status: run.state.status, owner: 'w' })
            continue
          }
          const unknown = run.state.effect === 'DISPATCHED' || run.state.effect === 'UNKNOWN'
          const to = unknown ? 'UNKNOWN' : step.to
          expected.set(i, {
            status: to,
            owner: null,
            result: to,
            transition: {
              attempt: r.attempt,
              from: run.state.status,
              to,
              reason: unknown ? 'EFFECT_UNKNOWN' : step.reason,
              detail: r.detail ?? null,
            },
          })
        }
        expect(results).toEqual(asked.map((i) => expected.get(i)!.result))
        for (const [i, id] of ids.entries()) {
          const [row] = await query<{ status: string; owner: string | null }>(store.db, sql`select status, owner from a2_jobs where id = ${id}`)
          const transitions = await query<{ attempt: number; from: string; to: string; reason: string; detail: unknown }>(
            store.db,
            sql`select attempt, from_status as from, to_status as to, reason, detail from a2_job_transitions where job_id = ${id}`,
          )
          const want = expected.get(i)!
          expect({ status: row.status, owner: row.owner }).toEqual({ status: want.status, owner: want.owner })
          expect(transitions).toEqual(want.transition ? [want.transition] : [])
        }
      }),
      { numRuns: RUNS, seed: SEED },
    )
  })

  // Declared on Postgres only (concurrent connections; PGlite has one), so the PGlite layer lists no skipped test.
  if (kind === 'postgres')
    it('batches over the same runs at once, in any order, lanes included: each run ends once, by one batch, and none deadlocks', async () => {
      const scenario = fc.record({
        lanes: fc.boolean(),
        first: fc.shuffledSubarray([0, 1, 2, 3, 4, 5, 6, 7], { minLength: 2 }),
        second: fc.shuffledSubarray([0, 1, 2, 3, 4, 5, 6, 7], { minLength: 2 }),
      })
      await fc.assert(
        fc.asyncProperty(scenario, async ({ lanes, first, second }) => {
          // Laned: four sessions of two jobs; each head is held, and its close unblocks the job behind it.
          const { ids } = await jobs(2, { lane: lanes ? 'gen' : undefined, sessions: 4 })
          const heads = lanes ? ids.filter((_, i) => i % 2 === 0) : ids
          await query(store.db, sql`update a2_jobs set attempt = 1, owner = 'w', lease_until = now() + interval '1 hour' where id in ${heads}`)
          const batch = (picks: number[]) =>
            endRuns(
              store.db,
              picks.map((p) => ({ fence: { jobId: ids[p], attempt: 1 }, rule: RULES.returned })),
            )
          const [a, b] = await Promise.all([batch(first), batch(second)])
          for (const head of heads) {
            const p = ids.indexOf(head)
            const ended = [first.includes(p) && a[first.indexOf(p)], second.includes(p) && b[second.indexOf(p)]].filter(Boolean)
            const history = await historyOf(store, head)
            if (first.includes(p) || second.includes(p)) {
              expect(ended).toEqual(['COMPLETED'])
              expect(history).toEqual(['1:ACTIVE>COMPLETED:RETURNED'])
            } else expect(history).toEqual([])
          }
          // A request for a job nobody holds (a waiting one) moved nothing.
          for (const id of ids.filter((id) => !heads.includes(id))) expect(await historyOf(store, id)).toEqual([])
          if (lanes) {
            const rows = await query<{ id: number; status: string; lane_blocked: boolean }>(
              store.db,
              sql`select id, status, lane_blocked from a2_jobs where id in ${ids} order by id`,
            )
            for (let i = 1; i < rows.length; i += 2) expect(rows[i].lane_blocked).toBe(rows[i - 1].status === 'ACTIVE')
          }
        }),
        { numRuns: RUNS, seed: SEED },
      )
    })

  // Declared on Postgres only (concurrent connections; PGlite has one), so the PGlite layer lists no skipped test.
  if (kind === 'postgres')
    it('a batch locks its rows in id order, whatever its requests’ order: held up at one row, it holds exactly the rows before it', async () => {
      const scenario = fc.record({
        order: fc.shuffledSubarray([0, 1, 2, 3, 4, 5], { minLength: 6, maxLength: 6 }),
        blocker: fc.integer({ min: 1, max: 4 }),
      })
      await fc.assert(
        fc.asyncProperty(scenario, async ({ order, blocker }) => {
          const { ids } = await jobs(6)
          await query(store.db, sql`update a2_jobs set attempt = 1, owner = 'w', lease_until = now() + interval '1 hour' where id in ${ids}`)
          const held = gate()
          const release = gate()
          // Another transaction holds one row: the batch stops there.
          const holder = store.db.transaction(async (tx) => {
            await tx.execute(sql`select id from a2_jobs where id = ${ids[blocker]} for update`)
            held.open()
            await release.promise
          })
          await held.promise
          const batch = store.db.transaction(async (tx) => {
            await tx.execute(sql`set local application_name = 'end-runs-under-test'`)
            // Planned as on a big table: an index probe per request, in the requests' order (the
            // plan a2_jobs gets once it holds a few thousand rows), not one scan in id order.
            await tx.execute(sql`set local enable_seqscan = off`)
            await tx.execute(sql`set local enable_hashjoin = off`)
            await tx.execute(sql`set local enable_mergejoin = off`)
            return endRuns(
              tx,
              order.map((p) => ({ fence: { jobId: ids[p], attempt: 1 }, rule: RULES.returned })),
            )
          })
          await waitUntil(async () => {
            const [row] = await query<{ n: number }>(
              store.db,
              sql`select count(*)::int as n from pg_stat_activity where application_name = 'end-runs-under-test' and wait_event_type = 'Lock'`,
            )
            return row.n === 1
          }, 'the batch to wait on the held row')
          const free = await store.db.transaction(async (tx) =>
            (await query<{ id: number }>(tx, sql`select id from a2_jobs where id in ${ids} order by id for update skip locked`)).map((r) =>
              Number(r.id),
            ),
          )
          release.open()
          await holder
          expect(await batch).toEqual(order.map(() => 'COMPLETED'))
          // Locked by the batch: every row before the held one, and none after it.
          expect(free).toEqual(ids.slice(blocker + 1))
        }),
        { numRuns: Math.min(RUNS, 15), seed: SEED },
      )
    })
})
