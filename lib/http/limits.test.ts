/**
 * The rate counters live in the database: two app instances (two stores on one database,
 * each with its own limiter) share one allowance. On PGlite the two limiters share its one
 * connection; on Postgres each has its own pool, as two processes would.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RateLimiterDrizzle, RateLimiterRes } from 'rate-limiter-flexible'
import { rateLimits } from '@/lib/db/schema'
import type { Store } from '@/lib/a2/server'
import { createTestDb, layers, type TestDb } from '@/test/db'

describe.each(layers)('database-backed rate limits on %s', (kind) => {
  let testDb: TestDb
  let stores: Store[]

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    const first = await testDb.open()
    stores = [first, kind === 'postgres' ? await testDb.open() : first]
  })
  afterAll(() => testDb.drop())

  it('two instances share one allowance, atomically, with the wait until the window ends', async () => {
    const [a, b] = stores.map(
      (store) => new RateLimiterDrizzle({ storeClient: store.db, schema: rateLimits, keyPrefix: 'generations:ip', points: 10, duration: 60 }),
    )
    // 30 concurrent takes, alternating instances: exactly the allowance gets through.
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (i % 2 ? a : b).consume('198.51.100.7').then(
          () => 'ok',
          (error: unknown) => error,
        ),
      ),
    )
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(10)
    const refused = outcomes.filter((o) => o !== 'ok')
    expect(refused.every((o) => o instanceof RateLimiterRes && o.msBeforeNext > 0 && o.msBeforeNext <= 60_000)).toBe(true)
    // Another key has its own allowance.
    await expect(a.consume('198.51.100.8')).resolves.toBeInstanceOf(RateLimiterRes)
  })
})
