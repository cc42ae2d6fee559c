/**
 * What a push and a chunk batch cost is what they touch, not the session's length, whatever
 * plan Postgres keeps for them. Their statements are prepared (plpgsql's, and the store's):
 * after five calls Postgres may keep a generic plan, chosen without the session's id or the
 * ids' count, and a plan chosen on stale statistics takes a session for a few rows. Each test
 * runs a 20k-event session with 1,000 runs, never analyzed, under a forced generic plan —
 * that case made certain rather than waited for — and counts the rows its statements read.
 *   - a2_push's duplicate check, and the read a push makes before it (admit-context.ts): as
 *     `id in (select …)` a hash join over every event of the session (100k events: 16–24 ms a
 *     push against 0.05 ms), until the next analyze. Now by key (sql/0005).
 *   - a chunk batch's admission (its run not stopped): it looked the run up among all of the
 *     session's runs, with no index to find it by its event's id — 1,000 rows a batch here,
 *     at every plan. Now by key (sql/0002); the transactional append's own check (a step that
 *     carries an id, log/append.ts) likewise.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql, TransactionRollbackError } from 'drizzle-orm'
import type { Store } from '@/lib/a2/server'
import { query, type Executor } from './internal/store/store'
import { readAdmitContext } from './internal/log/admit-context'
import { append } from './internal/log/append'
import { createTestDb, layers, type TestDb } from './test-kit/db'

const EVENTS = 20_000
/** A run (a job) every 20 events: 1,000 runs in the session, as 1,000 answers of 19 chunks make. */
const RUN_EVERY = 20
const RUNNING_INDEX = EVENTS - RUN_EVERY
const RUNNING_RUN = `e${RUNNING_INDEX}`
const STOPPED_INDEX = 40
const STOPPED_RUN = `e${STOPPED_INDEX}`

type Tx = Parameters<Parameters<Store['db']['transaction']>[0]>[0]

/** Rows of `table` this transaction has read so far, by any scan. */
async function rowsRead(tx: Executor, table = 'a2_events'): Promise<number> {
  const [row] = await query<{ read: string }>(
    tx,
    sql`select coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) as read from pg_stat_xact_user_tables where relname = ${table}`,
  )
  return Number(row?.read ?? 0)
}

/** Runs `measure` in a transaction under a forced generic plan, rolled back; answers what it returned. */
async function inGenericPlanRolledBack<T>(store: Store, measure: (tx: Tx) => Promise<T>): Promise<T> {
  let out: { value: T } | undefined
  await store.db
    .transaction(async (tx) => {
      await query(tx, sql`set local plan_cache_mode = force_generic_plan`)
      out = { value: await measure(tx) }
      tx.rollback() // nothing of the test's writes stays
    })
    .catch((error: unknown) => {
      if (!(error instanceof TransactionRollbackError)) throw error
    })
  if (!out) throw new Error('the measurement did not finish')
  return out.value
}

describe.each(layers)('a long session on %s', (kind) => {
  let testDb: TestDb
  let store: Store

  let running: number

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    store = await testDb.open()
    await query(store.db, sql`insert into a2_sessions (id, owner, head) values ('long', 'u', ${EVENTS})`)
    await query(
      store.db,
      sql`insert into a2_events (session_id, index, id, type, payload)
          select 'long', g, 'e' || g, 'chunk', '{}'::jsonb from generate_series(0, ${EVENTS - 1}) g`,
    )
    // A run every RUN_EVERY events, all finished but the newest (running) and one stopped.
    await query(
      store.db,
      sql`insert into a2_jobs (session_id, event_index, event_id, consumer, max_attempts, status, attempt)
          select 'long', g, 'e' || g, 'answer', 3, 'COMPLETED', 1 from generate_series(0, ${EVENTS - 1}, ${RUN_EVERY}) g`,
    )
    // By event_index, as the runtime finds a run: these statements' reads stay in the
    // connection's counters until they are flushed, and must not look like the tests'.
    await query(store.db, sql`update a2_jobs set status = 'CANCELLED' where session_id = 'long' and event_index = ${STOPPED_INDEX}`)
    const [row] = await query<{ id: string }>(
      store.db,
      sql`update a2_jobs set status = 'ACTIVE' where session_id = 'long' and event_index = ${RUNNING_INDEX} returning id`,
    )
    running = Number(row.id)
  }, 60_000)
  afterAll(async () => {
    await testDb?.drop()
  })

  it('a push looks a client id up by its key, not through the whole session', async () => {
    const read = await inGenericPlanRolledBack(store, async (tx) => {
      const before = await rowsRead(tx)
      const [answer] = await query<{ o_refused: string | null; o_start: number }>(
        tx,
        sql`select * from a2_push('long', 'u', '[{"id":"fresh","type":"note","payload":{}}]'::jsonb, '["fresh"]'::jsonb, 2,
                                  null, null, '[]'::jsonb, '[]'::jsonb, null, null, '[]'::jsonb, null, 'a2_plan_test', 16)`,
      )
      expect(answer).toMatchObject({ o_refused: null, o_start: EVENTS })
      const [again] = await query<{ o_refused: string | null }>(
        tx,
        sql`select * from a2_push('long', 'u', '[{"id":"e7","type":"note","payload":{}}]'::jsonb, '["e7"]'::jsonb, 2,
                                  null, null, '[]'::jsonb, '[]'::jsonb, null, null, '[]'::jsonb, null, 'a2_plan_test', 16)`,
      )
      expect(again?.o_refused).toBe('duplicate')
      // The read a push makes first (its admission's and abortOn's) looks for the same ids.
      for (let i = 0; i < 6; i++) {
        const context = await readAdmitContext(tx, 'long', { owner: 'u', ids: ['e9'] })
        expect(context.events.map((e) => e.index)).toEqual([9])
      }
      return (await rowsRead(tx)) - before
    })
    // Eight lookups, one id each: a few index entries apiece, never the session's 20,000.
    expect(read).toBeLessThan(20)
  })

  it('a chunk batch is admitted by its own run, not by reading every run of the session', async () => {
    const batch = (run: string, jobId: number | null, attempt: number | null) =>
      JSON.stringify([{ s: 'long', j: jobId, a: attempt, r: [run], e: [{ id: `c-${run}`, type: 'chunk', payload: { of: run } }] }])
    const { answers, read } = await inGenericPlanRolledBack(store, async (tx) => {
      const before = await rowsRead(tx, 'a2_jobs')
      const answers = []
      // Six calls: past the five custom plans plpgsql tries before it may keep a generic one.
      for (let i = 0; i < 6; i++) {
        const [ok] = await query<{ o_refused: string | null }>(tx, sql`select * from a2_append_steps_many(${batch(RUNNING_RUN, running, 1)}::jsonb)`)
        answers.push(ok.o_refused)
        await query(tx, sql`delete from a2_events where session_id = 'long' and id = ${`c-${RUNNING_RUN}`}`)
      }
      const [refused] = await query<{ o_refused: string | null }>(
        tx,
        sql`select * from a2_append_steps_many(${batch(STOPPED_RUN, null, null)}::jsonb)`,
      )
      answers.push(refused.o_refused)
      return { answers, read: (await rowsRead(tx, 'a2_jobs')) - before }
    })
    expect(answers).toEqual([null, null, null, null, null, null, 'run_cancelled'])
    // Seven batches: the fence's row and the batch's own run each, never the session's 1,000 runs.
    expect(read).toBeLessThan(30)
  })

  // Last: these appends commit.
  it('a step appended in a transaction (it carries an id) is admitted by its own run too', async () => {
    const noRoutes = { jobsFor: () => [], cancelsFor: () => [] }
    let read = Number.NaN
    await append(store, noRoutes, 'long', [{ id: 'step-1', type: 'chunk', payload: { of: RUNNING_RUN }, stepOf: RUNNING_RUN }], {
      fence: { jobId: running, attempt: 1 },
      within: async (tx) => {
        // After the fence and the admission, in their transaction. The count holds whatever
        // this connection read since its counters were last flushed, too: only ever more.
        read = await rowsRead(tx, 'a2_jobs')
      },
    })
    expect(read).toBeLessThan(50) // the session's 1,000 runs were read here
    await expect(
      append(store, noRoutes, 'long', [{ id: 'step-2', type: 'chunk', payload: { of: STOPPED_RUN }, stepOf: STOPPED_RUN }], {
        within: async () => {},
      }),
    ).rejects.toMatchObject({ code: 'run_cancelled' })
  })
})
