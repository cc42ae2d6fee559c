/**
 * A process's LISTEN connection is lost and taken again (Postgres only: PGlite's notifications
 * are in-process). A notification committed meanwhile reaches nobody — Postgres queues it only
 * for the listeners it has at commit — so a Stop pushed then would reach its run only at the
 * run's next lease renewal (every leaseMs / 3: 5 s for the chat). Its own database: the test
 * kills every LISTEN backend in it.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { sql } from 'drizzle-orm'
import { createServer, type Store } from '@/lib/a2/server'
import postgres from 'postgres'
import { createTestDb, layers, POSTGRES_URL, type TestDb } from './test-kit/db'
import { testContract } from './test-kit/contract'
import { busFor, type Hint } from './internal/log/bus'
import { consumer } from './internal/runtime/consumer'
import { query } from './internal/store/store'

const killListeners = async (store: Store) =>
  (
    await query<{ n: number }>(
      store.db,
      sql`select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid() and query ilike 'listen%'`,
    )
  )[0].n

describe.runIf(layers.includes('postgres'))('a lost LISTEN connection, on postgres', () => {
  let testDb: TestDb
  let store: Store
  beforeAll(async () => {
    testDb = await createTestDb('postgres')
    store = await testDb.open()
  })
  afterAll(async () => {
    await testDb?.drop()
  })

  it('once taken again, the bus tells every worker to look for what it missed (new jobs, recorded Stops)', async () => {
    const bus = await busFor(store)
    const heard: Hint[] = []
    const off = bus.onAny((hint) => heard.push(hint))
    try {
      expect(await killListeners(store)).toBeGreaterThan(0)
      await vi.waitFor(() => expect(heard.some((h) => h.recheckCancels && h.newJobs)).toBe(true), { timeout: 10_000 })
      expect(heard.filter((h) => h.recheckCancels)).toHaveLength(1)
    } finally {
      off()
      await bus.close()
    }
  })

  it('a Stop committed while the LISTEN connection is down reaches its running run when it is back, not at the next renewal', async () => {
    let onStart!: () => void
    const started = new Promise<void>((resolve) => (onStart = resolve))
    let onAbort!: (reason: unknown) => void
    const aborted = new Promise<unknown>((resolve) => (onAbort = resolve))
    const generate = consumer({ contract: testContract, name: 'generate', types: ['generate'], abortOn: ['cancelled'], leaseMs: 60_000 }).run(
      async (ctx) => {
        onStart()
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }))
        onAbort(ctx.signal.reason)
      },
    )
    const server = createServer({ contract: testContract, consumers: [generate], store })
    const worker = await server.startWorker({ pollMs: 100 })
    const database = (await query<{ name: string }>(store.db, sql`select current_database() as name`))[0].name
    try {
      const { id } = await server.sessions.create('u1')
      const [trigger] = await server.append(id, { type: 'generate', payload: {} })
      await started
      // The LISTEN connection goes, and cannot come back until the Stop is committed: no new
      // connection to this database is let in meanwhile (the pool's open ones go on).
      // (Set from another database: Postgres refuses it for the one a session is in.)
      const admin = postgres(POSTGRES_URL!, { max: 1, onnotice: () => {} })
      try {
        await admin.unsafe(`alter database "${database}" allow_connections false`)
        expect(await killListeners(store)).toBeGreaterThan(0)
        await server.append(id, { type: 'cancelled', payload: { of: trigger.id, lastSeenIndex: 0 } })
      } finally {
        await admin.unsafe(`alter database "${database}" allow_connections true`)
        await admin.end()
      }
      // The renewal that would find the Stop otherwise is 20 s away (leaseMs / 3).
      const reason = await Promise.race([aborted, new Promise((resolve) => setTimeout(() => resolve('no abort within 10 s'), 10_000))])
      expect(reason).toMatchObject({ code: 'CANCELLED' })
    } finally {
      await worker.stop()
    }
  })
})
