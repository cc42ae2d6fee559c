/**
 * Liveness in one process, on PGlite and on Postgres: a run left by a process that is gone
 * (a dev server restarted on PGlite; a killed worker on Postgres) is taken over as soon as
 * a worker starts — its owner's key is held by no one — not after the lease it still has.
 * The multi-process cases (kill -9, SIGTERM, a stalled live worker) are in multiprocess.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { performance } from 'node:perf_hooks'
import { sql } from 'drizzle-orm'
import { consumer, createServer, type A2Server, type Store } from '@/lib/a2/server'
import { LIVENESS_SETTLE_MS } from './internal/runtime/liveness'
import { query } from './internal/store/store'
import { createTestDb, layers, type TestDb } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'
import { historyOf, quarantineOpenJobs, waitForJob } from './test-kit/runtime'

describe.each(layers)('liveness on %s', (kind) => {
  let testDb: TestDb
  let store: Store
  let servers: Array<A2Server<typeof chat>> = []

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    store = await testDb.open()
  })
  afterEach(async () => {
    await Promise.all(servers.map((s) => s.stopWorkers()))
    servers = []
    await quarantineOpenJobs(store)
  })
  afterAll(async () => {
    await testDb.drop()
  })

  it('a run held by a process that is gone resumes as soon as a worker can tell, not after its lease', async () => {
    const attempts: number[] = []
    const c = consumer({ contract: chat, name: 'live', types: ['generate'], leaseMs: 60_000 }).run(async (ctx) => {
      attempts.push(ctx.attempt)
    })
    const server = createServer({ contract: chat, consumers: [c], store })
    servers.push(server)
    const { id: sessionId } = await server.sessions.create('u')
    const [g] = await server.append(sessionId, { type: 'generate', payload: {} })
    // As the previous process left it: claimed under its key, a minute of lease to go.
    await query(
      store.db,
      sql`update a2_jobs set attempt = 1, owner = 'previous-process', owner_key = 12345, lease_until = now() + interval '60 seconds'
          where event_id = ${g.id}`,
    )
    const startedAt = performance.now()
    await server.startWorker({ pollMs: 50 })
    const job = await waitForJob(store, g.id, 'live', (j) => j.status === 'COMPLETED', LIVENESS_SETTLE_MS + 10_000)
    // On Postgres a new process first trusts its own lock (3 s); PGlite has one process.
    if (kind === 'pglite') expect(performance.now() - startedAt).toBeLessThan(LIVENESS_SETTLE_MS)
    expect(attempts).toEqual([2])
    expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>ACTIVE:OWNER_DIED', '2:ACTIVE>COMPLETED:RETURNED'])
  })

  it('a run held by a live process is left alone; the moment that process is gone, it is taken over', async () => {
    const c = consumer({ contract: chat, name: 'kept', types: ['generate'], leaseMs: 60_000 }).run(async () => {})
    const server = createServer({ contract: chat, consumers: [c], store })
    servers.push(server)
    const { id: sessionId } = await server.sessions.create('u')
    // Another process's liveness: its own lock (on Postgres, on a connection of its own).
    const otherProcess = (await store.holdLifeLock!(777_777))!
    const [held] = await server.append(sessionId, { type: 'generate', payload: {} })
    const [orphan] = await server.append(sessionId, { type: 'generate', payload: {} })
    const claimAs = (eventId: string, owner: string, key: number) =>
      query(
        store.db,
        sql`update a2_jobs set attempt = 1, owner = ${owner}, owner_key = ${key}, lease_until = now() + interval '60 seconds'
                          where event_id = ${eventId}`,
      )
    await claimAs(held.id, 'live-process', 777_777)
    await claimAs(orphan.id, 'dead-process', 12_345)
    await server.startWorker({ pollMs: 50 })
    // The sweep that released the orphan judged every held run in the same statement.
    await waitForJob(store, orphan.id, 'kept', (j) => j.status === 'COMPLETED', LIVENESS_SETTLE_MS + 10_000)
    expect(await waitForJob(store, held.id, 'kept', () => true)).toMatchObject({ attempt: 1, owner: 'live-process', status: 'ACTIVE' })

    await otherProcess.release() // that process is gone now
    const job = await waitForJob(store, held.id, 'kept', (j) => j.status === 'COMPLETED')
    expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>ACTIVE:OWNER_DIED', '2:ACTIVE>COMPLETED:RETURNED'])
  })
})
