/**
 * The runtime across real processes on one Postgres (DESIGN rules 3, 4, 8, 9): workers run
 * in child processes (`test/worker-process.ts`), the test process appends and watches the
 * tables. A cancel appended here aborts a run over there; `kill -9` of a worker mid-run is
 * recovered by another worker after the lease; kills that spend the budget end FAILED with
 * an `a2.failed` event. Postgres only: PGlite is one in-process connection.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type A2Server, type Store } from '@/lib/a2/server'
import { createTestDb, POSTGRES_URL, type TestDb } from '@/test/db'
import { testContract } from '@/test/contract'
import { createLeakGuard, type LeakGuard } from '@/test/guard'
import { eventsOf, historyOf, jobOf, quarantineOpenJobs, waitForJob } from '@/test/runtime'
import { epochNow, mpConsumers, spawnWorker, type WorkerChild } from '@/test/worker-process'

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

  async function start(modes: Array<'quick' | 'hang' | 'hang-first'>, leaseMs = LEASE_MS): Promise<WorkerChild[]> {
    const started = modes.map((mode) => spawnWorker({ url: testDb.url!, mode, leaseMs, pollMs: 200 }))
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

  it('kill -9 of a worker mid-run: another worker process completes the job after the lease', async () => {
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
    // Attempt 1 died without settling anything; attempt 2 completed.
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
