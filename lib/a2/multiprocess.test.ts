/**
 * The runtime across real processes on one Postgres : workers run
 * in child processes (`test-kit/worker-process.ts`), the test process appends and watches the
 * tables. A cancel appended here aborts a run over there; `kill -9` of a worker mid-run is
 * taken over as soon as its liveness lock is gone (or after the lease, before anyone trusts
 * liveness); SIGTERM hands runs over at once; a live worker stalled for less than its lease
 * keeps its run; kills that spend the budget end FAILED with an `a2.failed` event. Postgres
 * only: PGlite is one in-process connection.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type A2Server, type Store } from '@/lib/a2/server'
import { createTestDb, POSTGRES_URL, type TestDb } from './test-kit/db'
import { testContract } from './test-kit/contract'
import { createLeakGuard, type LeakGuard } from './test-kit/guard'
import { eventsOf, historyOf, jobOf, quarantineOpenJobs, waitForJob, waitUntil } from './test-kit/runtime'
import { LIVENESS_SETTLE_MS } from './internal/runtime/liveness'
import { epochNow, mpConsumers, spawnWorker, type WorkerChild } from './test-kit/worker-process'

const LEASE_MS = 1_000

describe.skipIf(!POSTGRES_URL)('consumer runtime across processes on postgres (set TEST_DATABASE_URL to run)', () => {
  let testDb: TestDb
  let store: Store
  let guard: LeakGuard
  /** The appending side: same consumer definitions as the children, so appends create their jobs. */
  let server: A2Server<typeof testContract>
  let children: WorkerChild[] = []

  beforeAll(async () => {
    guard = createLeakGuard()
    testDb = await createTestDb('postgres')
    store = guard.store(await testDb.open())
    server = guard.server(createServer({ contract: testContract, consumers: mpConsumers({ leaseMs: LEASE_MS }), store }))
  })

  afterEach(async () => {
    await Promise.all(children.map((c) => c.kill('SIGKILL')))
    children = []
    await server.stopWorkers({ graceMs: 0 })
    await quarantineOpenJobs(store)
  })

  afterAll(async () => {
    await Promise.all(children.map((c) => c.kill('SIGKILL')))
    try {
      await guard.check({ closeStores: true, postgresUrl: POSTGRES_URL, database: new URL(testDb.url!).pathname.slice(1) })
    } finally {
      await testDb.drop()
    }
  })

  async function start(modes: Array<'quick' | 'hang' | 'hang-first' | 'freeze'>, leaseMs = LEASE_MS, freezeMs = 0): Promise<WorkerChild[]> {
    const started = modes.map((mode) => spawnWorker({ url: testDb.url!, mode, leaseMs, pollMs: 200, freezeMs }))
    for (const child of started) guard.child(child.process)
    children.push(...started)
    await Promise.all(started.map((child) => child.waitFor('ready')))
    return started
  }

  it('a cancel appended in this process aborts ctx.signal of the run in a worker process', async () => {
    // A long lease: renewals (a third of it) are far apart, so only the NOTIFY can deliver the cancel in time.
    const [worker] = await start(['hang'], 15_000)
    const { id: session } = await server.sessions.create('u1')
    const [g] = await server.append(session, { type: 'generate', payload: {} })
    const started = await worker.waitFor('started', (r) => r.eventId === g.id)
    expect(started.attempt).toBe(1)

    const appendedAt = epochNow()
    const [cancel] = await server.append(session, { type: 'cancelled', payload: { of: g.id, lastSeenIndex: 0 } })
    const aborted = await worker.waitFor('aborted', (r) => r.jobId === started.jobId)
    expect(aborted.code).toBe('CANCELLED')
    expect(aborted.event).toEqual({ id: cancel.id, index: cancel.index })
    // Over NOTIFY, not the next lease renewal (5 s away).
    expect(aborted.at - appendedAt).toBeLessThan(2_000)

    const job = await waitForJob(store, g.id, 'mp-generate', (j) => j.status === 'CANCELLED')
    expect(job.attempt).toBe(1)
    expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>CANCELLING:CANCEL_APPENDED', '1:CANCELLING>CANCELLED:STOPPED_BY_CANCEL'])
    expect(worker.reports.filter((r) => r.t === 'started')).toHaveLength(1)
  })

  /** Until every child has held its liveness lock long enough to judge others dead (liveness.ts). */
  async function trusted(children: WorkerChild[]): Promise<void> {
    const readyAt = Math.max(...children.map((c) => c.reports.find((r) => r.t === 'ready')!.at))
    await waitUntil(
      () => epochNow() - readyAt > LIVENESS_SETTLE_MS + 100,
      'the workers to trust their own liveness locks',
      LIVENESS_SETTLE_MS + 5_000,
    )
  }

  it('kill -9 of a worker mid-run: another worker sees the owner die and takes the run over long before its 15 s lease', async () => {
    const pair = await start(['hang-first', 'hang-first'], 15_000)
    await trusted(pair)
    const { id: session } = await server.sessions.create('u1')
    const [g] = await server.append(session, { type: 'generate', payload: {} })
    const first = await Promise.any(pair.map((c) => c.waitFor('started', (r) => r.eventId === g.id)))
    const victim = pair.find((c) => c.reports.includes(first))!
    const survivor = pair.find((c) => c !== victim)!
    await victim.kill('SIGKILL')
    const killedAt = epochNow()

    const second = await survivor.waitFor('started', (r) => r.eventId === g.id)
    expect(second.attempt).toBe(2)
    expect(second.at - killedAt).toBeLessThan(15_000) // the lease still had ~10–15 s to run
    const job = await waitForJob(store, g.id, 'mp-generate', (j) => j.status === 'COMPLETED')
    expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>ACTIVE:OWNER_DIED', '2:ACTIVE>COMPLETED:RETURNED'])
  })

  it('SIGTERM hands a run over at once: surrendered with its attempt refunded, continued by another worker', async () => {
    const pair = await start(['hang-first', 'hang-first'], 15_000)
    const { id: session } = await server.sessions.create('u1')
    const [g] = await server.append(session, { type: 'generate', payload: {} })
    const first = await Promise.any(pair.map((c) => c.waitFor('started', (r) => r.eventId === g.id)))
    const leaving = pair.find((c) => c.reports.includes(first))!
    const staying = pair.find((c) => c !== leaving)!
    const termAt = epochNow()
    await leaving.kill('SIGTERM')
    const second = await staying.waitFor('started', (r) => r.eventId === g.id)
    expect(second.at - termAt).toBeLessThan(15_000) // not after the lease
    const job = await waitForJob(store, g.id, 'mp-generate', (j) => j.status === 'COMPLETED')
    expect(job.max_attempts).toBe(4) // refunded: the shutdown was not the run's fault
    expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>ACTIVE:SURRENDERED', '2:ACTIVE>COMPLETED:RETURNED'])
  })

  it('a live worker whose event loop stalls for less than its lease keeps its run: nobody takes it over', async () => {
    const [frozen] = await start(['freeze'], 15_000, 8_000)
    const { id: session } = await server.sessions.create('u1')
    const [g] = await server.append(session, { type: 'generate', payload: {} })
    await frozen.waitFor('started', (r) => r.eventId === g.id) // and from here its loop is stalled for 8 s
    const [watcher] = await start(['quick'], 15_000)
    await trusted([watcher]) // the watcher now judges owners dead from their locks, every 200 ms
    const job = await waitForJob(store, g.id, 'mp-generate', (j) => j.status === 'COMPLETED', 20_000)
    // No renewal and not one tick of its loop for 8 s; the watcher drained for ~5 s of them: still its run.
    expect(job.attempt).toBe(1)
    expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>COMPLETED:RETURNED'])
    expect(watcher.reports.filter((r) => r.t === 'started' && r.eventId === g.id)).toHaveLength(0)
  })

  it('kill -9 of a worker mid-run, before anyone trusts liveness: another worker process completes the job after the lease', async () => {
    const pair = await start(['hang-first', 'hang-first'])
    const { id: session } = await server.sessions.create('u1')
    const [g] = await server.append(session, { type: 'generate', payload: {} })
    const first = await Promise.any(pair.map((c) => c.waitFor('started', (r) => r.eventId === g.id)))
    const victim = pair.find((c) => c.reports.includes(first))!
    const survivor = pair.find((c) => c !== victim)!

    const claimed = (await jobOf(store, g.id, 'mp-generate'))!
    expect(claimed).toMatchObject({ attempt: 1, status: 'ACTIVE' })
    await victim.kill('SIGKILL')
    const killedAt = epochNow()

    const second = await survivor.waitFor('started', (r) => r.eventId === g.id)
    expect(second.attempt).toBe(2)
    // Not before the dead worker's lease ran out (it renewed every third of the lease until killed).
    expect(second.at - killedAt).toBeGreaterThan(LEASE_MS / 3 - 100)
    expect(second.at - killedAt).toBeLessThan(LEASE_MS + 2_000)

    const job = await waitForJob(store, g.id, 'mp-generate', (j) => j.status === 'COMPLETED')
    expect(job.attempt).toBe(2)
    expect(job.owner).toBeNull()
    // Attempt 1 died without settling anything; attempt 2 completed. (The survivor started
    // < 3 s before the kill, so it could not yet judge the owner dead from its lock: the lease decided.)
    expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>ACTIVE:LEASE_EXPIRED', '2:ACTIVE>COMPLETED:RETURNED'])
  })

  it('kills that spend the whole budget end the job FAILED, with an a2.failed event in the log', async () => {
    const pair = await start(['hang', 'hang'])
    // A worker in this process for the same consumer: no attempt is left, so it only drains (fails the exhausted job).
    const controller = guard.server(createServer({ contract: testContract, consumers: mpConsumers({ leaseMs: LEASE_MS }), store }))
    const { id: session } = await server.sessions.create('u1')
    const [m] = await server.append(session, { type: 'message', payload: { text: 'work' } })

    const first = await Promise.any(pair.map((c) => c.waitFor('started', (r) => r.eventId === m.id)))
    const firstWorker = pair.find((c) => c.reports.includes(first))!
    expect(first.attempt).toBe(1)
    await firstWorker.kill('SIGKILL')

    const otherWorker = pair.find((c) => c !== firstWorker)!
    const second = await otherWorker.waitFor('started', (r) => r.eventId === m.id)
    expect(second.attempt).toBe(2)
    await otherWorker.kill('SIGKILL')

    const drainer = guard.worker(await controller.startWorker({ pollMs: 200 }))
    try {
      const job = await waitForJob(store, m.id, 'mp-budget', (j) => j.status === 'FAILED', 10_000)
      // The drain takes the run as attempt 3 (fencing out the dead attempt 2) to fail it.
      expect(job).toMatchObject({ attempt: 3, max_attempts: 2, owner: null })
      expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>ACTIVE:LEASE_EXPIRED', '3:ACTIVE>FAILED:ATTEMPTS_EXHAUSTED'])
      const failed = (await eventsOf(store, session)).filter((e) => e.type === 'a2.failed')
      expect(failed).toHaveLength(1)
      expect(failed[0].payload).toMatchObject({ of: m.id, consumer: 'mp-budget', attempts: 2, error: { code: 'LEASE_EXPIRED' } })
    } finally {
      await controller.stopWorkers({ graceMs: 0 })
    }
    expect(drainer.activeCount).toBe(0)
  })
})
