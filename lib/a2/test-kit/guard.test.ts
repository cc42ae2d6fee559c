/**
 * The leak guard can fail: a worker left running, a timer left pending and a database
 * connection left open are each reported; a clean file passes.
 */
import { describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { consumer, createServer, openPostgresStore } from '@/lib/a2/server'
import { createTestDb, POSTGRES_URL } from './db'
import { testContract } from './contract'
import { createLeakGuard } from './guard'

describe('the leak guard', () => {
  it('reports a worker left running (its bus subscription and its poll timer), and passes once it is stopped', async () => {
    const testDb = await createTestDb('pglite')
    try {
      const store = await testDb.open()
      const c = consumer({ contract: testContract, name: 'g', types: ['generate'] }).run(async () => {})

      const leaky = createLeakGuard()
      const server = leaky.server(createServer({ contract: testContract, consumers: [c], store }))
      leaky.worker(await server.startWorker({ pollMs: 60_000 }))
      // The worker's first tick (drain, claim) ends in its poll sleep.
      await leaky.timerPending()
      const error = await leaky.check({ settleMs: 50 }).catch((e: Error) => e)
      expect(error).toBeInstanceOf(Error)
      expect((error as Error).message).toMatch(/holds 1 bus subscription/)
      expect((error as Error).message).toMatch(/a2 timeout from .*worker\.ts.* never fired nor was cleared/)
      await server.stopWorkers()

      const clean = createLeakGuard()
      const again = clean.server(createServer({ contract: testContract, consumers: [c], store }))
      clean.worker(await again.startWorker({ pollMs: 60_000 }))
      await again.stopWorkers()
      await expect(clean.check()).resolves.toBeUndefined()
    } finally {
      await testDb.drop()
    }
  })

  it.skipIf(!POSTGRES_URL)('reports a connection still open to the file’s database', async () => {
    const testDb = await createTestDb('postgres')
    const database = new URL(testDb.url!).pathname.slice(1)
    try {
      const guard = createLeakGuard()
      guard.store(await testDb.open())
      const forgotten = await openPostgresStore(testDb.url!, { max: 1 })
      await forgotten.db.execute(sql`select 1`)
      const error = await guard.check({ closeStores: true, postgresUrl: POSTGRES_URL, database }).catch((e: Error) => e)
      expect((error as Error).message).toMatch(/1 connection\(s\) to a2_test_\w+ are still open/)
      await forgotten.close()
    } finally {
      await testDb.drop()
    }
  })
})
