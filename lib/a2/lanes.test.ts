/**
 * Lane heads (§10, lib/a2/sql/0004_lane_heads.ts), on PGlite and on Postgres: only the
 * first open job of a (session, consumer, lane) is claimable, and the head moves only when
 * it closes — COMPLETED, CANCELLED, FAILED, or an UNKNOWN run an operator settled — never on
 * a retry's backoff, nor when a job waiting behind it is cancelled. The claim reads the flag
 * alone, so these check the flag and the claim together. On Postgres, the two races the
 * triggers' locks are for: an append into a lane whose head is closing, and a head closing
 * while an append into its lane has not committed.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { consumer, createServer, type A2Server, type Store } from '@/lib/a2/server'
import { claimJobs, scheduleRetry, type ClaimedJob } from './internal/runtime/jobs'
import { endRuns, RETURNED, type EndRule } from './internal/runtime/end-runs'
import type { Executor } from './internal/store/store'
import type { Fence } from './internal/core/types'
import { query } from './internal/store/store'
import { createTestDb, layers, type TestDb } from './test-kit/db'
import { MIGRATIONS } from './sql'
import { splitStatements } from './internal/store/split-sql'
import { testContract as chat } from './test-kit/contract'
import { quarantineOpenJobs, waitUntil } from './test-kit/runtime'

const OPEN = new Set(['ACTIVE', 'CANCELLING', 'UNKNOWN'])

/** One run's ending in a statement of its own: the status it moved to, or undefined when the fence no longer holds it. */
async function endOne(executor: Executor, fence: Fence, rule: EndRule) {
  const [status] = await endRuns(executor, [{ fence, rule }])
  return status
}

describe.each(layers)('lane heads on %s', (kind) => {
  let testDb: TestDb
  let store: Store
  beforeAll(async () => {
    testDb = await createTestDb(kind)
    store = await testDb.open()
  })
  afterEach(async () => {
    await quarantineOpenJobs(store)
  })
  afterAll(async () => {
    await testDb.drop()
  })

  let n = 0
  /** A laned consumer (no worker: the test claims and settles), one session, and helpers. */
  async function lane() {
    const name = `lane${++n}`
    const c = consumer({
      contract: chat,
      name,
      types: ['generate'],
      lane: 'gen',
      maxAttempts: 3,
      abortOn: { cancelled: (event, trigger) => event.payload.of === trigger.id },
    }).run(async () => {})
    const server: A2Server<typeof chat> = createServer({ contract: chat, consumers: [c], store })
    const { id: sessionId } = await server.sessions.create('u')
    const append = async (session = sessionId) => {
      const [event] = await server.append(session, { type: 'generate', payload: {} })
      const [{ id }] = await query<{ id: number }>(store.db, sql`select id from a2_jobs where event_id = ${event.id} and consumer = ${name}`)
      return { eventId: event.id, jobId: Number(id) }
    }
    const claim = async (): Promise<ClaimedJob[]> => claimJobs(store.db, { consumers: [name], owner: 'test', leaseMs: { [name]: 60_000 }, limit: 10 })
    const cancel = (eventId: string) => server.append(sessionId, { type: 'cancelled', payload: { of: eventId, lastSeenIndex: 0 } })
    /** Each job of the lane in log order: its status and, while open, whether it waits behind an earlier one (a settled job's flag means nothing). */
    const jobs = async () =>
      (
        await query<{ id: number; status: string; lane_blocked: boolean }>(
          store.db,
          sql`select id, status, lane_blocked from a2_jobs where consumer = ${name} and session_id = ${sessionId} order by event_index`,
        )
      ).map((j) => `${j.status}${j.lane_blocked && OPEN.has(j.status) ? ' (waits)' : ''}`)
    return { name, server, sessionId, append, claim, cancel, jobs }
  }

  it('a job appended into an empty lane is its head at once; the next one waits and is not claimed', async () => {
    const l = await lane()
    const first = await l.append()
    expect(await l.jobs()).toEqual(['ACTIVE'])
    const second = await l.append()
    expect(await l.jobs()).toEqual(['ACTIVE', 'ACTIVE (waits)'])
    expect((await l.claim()).map((j) => j.id)).toEqual([first.jobId])
    expect(await l.claim()).toEqual([])
    expect(second.jobId).toBeGreaterThan(first.jobId)
  })

  it('two jobs of one lane appended in one append: the first is the head, the second waits', async () => {
    const l = await lane()
    await l.server.append(l.sessionId, { type: 'generate', payload: {} }, { type: 'generate', payload: {} })
    expect(await l.jobs()).toEqual(['ACTIVE', 'ACTIVE (waits)'])
    expect(await l.claim()).toHaveLength(1)
  })

  it('the head moves when it COMPLETES', async () => {
    const l = await lane()
    await l.append()
    const second = await l.append()
    const [head] = await l.claim()
    expect(await endOne(store.db, { jobId: head.id, attempt: head.attempt }, RETURNED)).toBe('COMPLETED')
    expect(await l.jobs()).toEqual(['COMPLETED', 'ACTIVE'])
    expect((await l.claim()).map((j) => j.id)).toEqual([second.jobId])
  })

  it('the head moves when it is CANCELLED, and not before: a CANCELLING head still holds the lane', async () => {
    const l = await lane()
    const first = await l.append()
    const second = await l.append()
    const [head] = await l.claim()
    await l.cancel(first.eventId)
    expect(await l.jobs()).toEqual(['CANCELLING', 'ACTIVE (waits)'])
    expect(await l.claim()).toEqual([])
    expect(await endOne(store.db, { jobId: head.id, attempt: head.attempt }, RETURNED)).toBe('CANCELLED')
    expect(await l.jobs()).toEqual(['CANCELLED', 'ACTIVE'])
    expect((await l.claim()).map((j) => j.id)).toEqual([second.jobId])
  })

  it('the head moves when it FAILS', async () => {
    const l = await lane()
    await l.append()
    const second = await l.append()
    const [head] = await l.claim()
    const ended = await endOne(store.db, { jobId: head.id, attempt: head.attempt }, { ACTIVE: { to: 'FAILED', reason: 'ATTEMPTS_EXHAUSTED' } })
    expect(ended).toBe('FAILED')
    expect(await l.jobs()).toEqual(['FAILED', 'ACTIVE'])
    expect((await l.claim()).map((j) => j.id)).toEqual([second.jobId])
  })

  it('a retry waiting out its backoff keeps the head: the next job is not claimed meanwhile', async () => {
    const l = await lane()
    const first = await l.append()
    await l.append()
    const [head] = await l.claim()
    expect(await scheduleRetry(store.db, { jobId: head.id, attempt: head.attempt }, 60_000, { message: 'boom' })).toBe('RETRY_SCHEDULED')
    expect(await l.jobs()).toEqual(['ACTIVE', 'ACTIVE (waits)'])
    expect(await l.claim()).toEqual([])
    // Due now: the same head is claimed again, as its second attempt.
    await query(store.db, sql`update a2_jobs set run_at = now() where id = ${first.jobId}`)
    expect((await l.claim()).map((j) => [j.id, j.attempt])).toEqual([[first.jobId, 2]])
  })

  /** Claims the head and ends it UNKNOWN: an effect its attempt dispatched could not be reconciled. */
  async function unknownHead(l: Awaited<ReturnType<typeof lane>>) {
    const [head] = await l.claim()
    await query(
      store.db,
      sql`insert into a2_effects (job_id, key, status, attempt, cancel_version) values (${head.id}, 'tool', 'UNKNOWN', ${head.attempt}, 0)`,
    )
    expect(await endOne(store.db, { jobId: head.id, attempt: head.attempt }, RETURNED)).toBe('UNKNOWN')
    return head
  }

  it('an UNKNOWN head holds its lane until the operator resolves it; resolved, it runs again first, then the next', async () => {
    const l = await lane()
    await l.append()
    const second = await l.append()
    const head = await unknownHead(l)
    expect(await l.jobs()).toEqual(['UNKNOWN', 'ACTIVE (waits)'])
    expect(await l.claim()).toEqual([])
    expect(await l.server.operator.resolveEffect(head.id, 'tool', { done: true, result: 'x' }, 'operator')).toEqual({ status: 'ACTIVE' })
    expect(await l.jobs()).toEqual(['ACTIVE', 'ACTIVE (waits)'])
    const [again] = await l.claim()
    expect([again.id, again.attempt]).toEqual([head.id, 2])
    expect(await endOne(store.db, { jobId: again.id, attempt: again.attempt }, RETURNED)).toBe('COMPLETED')
    expect((await l.claim()).map((j) => j.id)).toEqual([second.jobId])
  })

  it('an operator resolving a stopped UNKNOWN head ends it CANCELLED and moves the head', async () => {
    const l = await lane()
    const first = await l.append()
    const second = await l.append()
    const head = await unknownHead(l)
    await l.cancel(first.eventId)
    expect(await l.jobs()).toEqual(['UNKNOWN', 'ACTIVE (waits)'])
    expect(await l.server.operator.resolveEffect(head.id, 'tool', { done: false }, 'operator')).toEqual({ status: 'CANCELLED' })
    expect(await l.jobs()).toEqual(['CANCELLED', 'ACTIVE'])
    expect((await l.claim()).map((j) => j.id)).toEqual([second.jobId])
  })

  it('a waiting job stopped and settled leaves the head where it is; the head then passes over it', async () => {
    const l = await lane()
    await l.append()
    const second = await l.append()
    const third = await l.append()
    const [head] = await l.claim()
    await l.cancel(second.eventId)
    // As the drain settles a run cancelled before it started (attempt 0, never claimed).
    expect(await endOne(store.db, { jobId: second.jobId, attempt: 0 }, { CANCELLING: { to: 'CANCELLED', reason: 'CANCELLED_BEFORE_START' } })).toBe(
      'CANCELLED',
    )
    expect(await l.jobs()).toEqual(['ACTIVE', 'CANCELLED', 'ACTIVE (waits)'])
    expect(await l.claim()).toEqual([])
    expect(await endOne(store.db, { jobId: head.id, attempt: head.attempt }, RETURNED)).toBe('COMPLETED')
    expect(await l.jobs()).toEqual(['COMPLETED', 'CANCELLED', 'ACTIVE'])
    expect((await l.claim()).map((j) => j.id)).toEqual([third.jobId])
  })

  it('a stuck lane holds up only itself: the same lane in another session is claimed', async () => {
    const l = await lane()
    await l.append()
    await l.append()
    await unknownHead(l)
    const { id: other } = await l.server.sessions.create('u')
    const elsewhere = await l.append(other)
    expect((await l.claim()).map((j) => j.id)).toEqual([elsewhere.jobId])
  })

  it('the backfill flags exactly the open jobs behind an earlier open job of their lane', async () => {
    const l = await lane()
    const { sessionId, name } = l
    // Log order: COMPLETED, UNKNOWN (the head), ACTIVE, CANCELLING, CANCELLED; then the same
    // lane name of another consumer, a job of no lane, and another lane of this consumer.
    const rows: Array<[number, string, string | null, string]> = [
      [0, name, 'gen', 'COMPLETED'],
      [1, name, 'gen', 'UNKNOWN'],
      [2, name, 'gen', 'ACTIVE'],
      [3, name, 'gen', 'CANCELLING'],
      [4, name, 'gen', 'CANCELLED'],
      [5, `${name}-other`, 'gen', 'ACTIVE'],
      [6, name, null, 'ACTIVE'],
      [7, name, 'side', 'ACTIVE'],
    ]
    for (const [index, consumerName, laneKey, status] of rows) {
      await query(
        store.db,
        sql`insert into a2_jobs (session_id, event_index, event_id, consumer, lane, max_attempts, status)
            values (${sessionId}, ${index}, ${`e${index}`}, ${consumerName}, ${laneKey}, 3, ${status})`,
      )
    }
    const flags = async () =>
      (
        await query<{ lane_blocked: boolean; status: string }>(
          store.db,
          sql`select lane_blocked, status from a2_jobs where session_id = ${sessionId} order by event_index`,
        )
      ).map((r) => (OPEN.has(r.status) ? r.lane_blocked : 'settled'))
    const expected = ['settled', false, true, true, 'settled', false, false, false]
    expect(await flags()).toEqual(expected) // as the insert trigger set them
    // As a database from before lane heads had them: no flags. Then the migration's backfill.
    await query(store.db, sql`update a2_jobs set lane_blocked = false where session_id = ${sessionId}`)
    const backfill = splitStatements(MIGRATIONS.find((m) => m.name === 'lane_heads')!.sql).find((s) =>
      s.includes('UPDATE "a2_jobs" j SET "lane_blocked" = true'),
    )
    expect(backfill).toBeDefined()
    await query(store.db, sql.raw(backfill!.replace(/;\s*$/, '')))
    expect(await flags()).toEqual(expected)
  })

  // The races the triggers' locks are for need two connections: Postgres only.
  const onPostgres = kind === 'postgres' ? it : () => {}

  /** Runs `during` inside a transaction that holds `hold`'s row locks until `during`'s other work waits on them (or finished). */
  async function holding<T>(hold: (tx: postgres.TransactionSql) => Promise<unknown>, during: () => Promise<T>): Promise<T> {
    const raw = postgres(testDb.url!, { max: 1, onnotice: () => {} })
    try {
      let work: Promise<T> | undefined
      let settled = false
      await raw.begin(async (tx) => {
        await hold(tx)
        work = during()
        void work.then(
          () => (settled = true),
          () => (settled = true),
        )
        await waitUntil(async () => {
          if (settled) return true
          const [w] = await tx`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`
          return w.n > 0
        }, 'the other statement to wait on a row lock (or finish)')
      })
      return await work!
    } finally {
      await raw.end()
    }
  }

  onPostgres('an append into a lane whose head is closing waits for the close, and its job is the new head', async () => {
    const l = await lane()
    const first = await l.append()
    await l.claim()
    // The head's close, uncommitted while the append runs: without the insert's share lock
    // the append would see the head ACTIVE, wait behind it, and nobody would move it on.
    const second = await holding(
      (tx) => tx`update a2_jobs set status = 'COMPLETED', owner = null, lease_until = null where id = ${first.jobId}`,
      () => l.append(),
    )
    expect(await l.jobs()).toEqual(['COMPLETED', 'ACTIVE'])
    expect((await l.claim()).map((j) => j.id)).toEqual([second.jobId])
  })

  onPostgres('a head closing while an append into its lane is uncommitted moves the head to the appended job', async () => {
    const l = await lane()
    const first = await l.append()
    const [head] = await l.claim()
    // A job inserted into the lane, uncommitted while the head closes: the close waits for it
    // (the insert share-locked the head) and must then see it.
    const ended = await holding(
      (tx) =>
        tx`insert into a2_jobs (session_id, event_index, event_id, consumer, lane, max_attempts)
           values (${l.sessionId}, 1, 'late', ${l.name}, 'gen', 3)`,
      () => endOne(store.db, { jobId: head.id, attempt: head.attempt }, RETURNED),
    )
    expect(ended).toBe('COMPLETED')
    expect(await l.jobs()).toEqual(['COMPLETED', 'ACTIVE'])
    const [next] = await l.claim()
    expect(next.id).toBeGreaterThan(first.jobId)
  })

  onPostgres('a head closing while the settle of the job behind it is uncommitted passes over that job to the next', async () => {
    const l = await lane()
    await l.append()
    const second = await l.append()
    const third = await l.append()
    const [head] = await l.claim()
    await l.cancel(second.eventId)
    // The waiting job's settle (as the drain's), uncommitted while the head closes: the close
    // finds it open, waits for its lock, and must then skip it for the job after it.
    const ended = await holding(
      (tx) => tx`update a2_jobs set status = 'CANCELLED' where id = ${second.jobId}`,
      () => endOne(store.db, { jobId: head.id, attempt: head.attempt }, RETURNED),
    )
    expect(ended).toBe('COMPLETED')
    expect(await l.jobs()).toEqual(['COMPLETED', 'CANCELLED', 'ACTIVE'])
    expect((await l.claim()).map((j) => j.id)).toEqual([third.jobId])
  })
})
