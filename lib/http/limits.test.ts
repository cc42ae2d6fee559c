/**
 * The rate counters live in the database: two app instances (two stores on one database)
 * share one allowance. On PGlite the two share its one connection; on Postgres each has its
 * own pool, as two processes would.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { A2Error } from '@/lib/a2'
import type { Store } from '@/lib/a2/server'
import { createTestDb, layers, type TestDb } from '@/test/db'
import { countingStore } from '@/lib/a2/testing'
import { takeLimits, type LimitName, type Take } from './limits'

async function rows<T>(store: Store, statement: ReturnType<typeof sql>): Promise<T[]> {
  const result = (await store.db.execute(statement)) as unknown
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[]
}

const outcome = (p: Promise<void>) =>
  p.then(
    () => 'ok' as const,
    (error: unknown) => error,
  )

describe.each(layers)('database-backed rate limits on %s', (kind) => {
  let testDb: TestDb
  let stores: Store[]
  let single: Store

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    const first = await testDb.open()
    stores = [first, kind === 'postgres' ? await testDb.open() : first]
    single = kind === 'postgres' ? await testDb.open({ max: 1 }) : first
  })
  afterAll(() => testDb.drop())

  it('two instances share one allowance, atomically, with the wait until the window ends', async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, (_, i) => outcome(takeLimits(stores[i % 2], [['generationsByAddress', '198.51.100.7', 1]], () => 10))),
    )
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(10)
    const refused = outcomes.filter((o) => o !== 'ok')
    expect(
      refused.every(
        (o) => o instanceof A2Error && o.code === 'rate_limited' && [59, 60].includes((o.details as { retryAfterS: number }).retryAfterS),
      ),
    ).toBe(true)
    // Another key has its own allowance.
    await expect(takeLimits(stores[0], [['generationsByAddress', '198.51.100.8', 1]], () => 10)).resolves.toBeUndefined()
  })

  it("takes a request's limits in one statement, counts each whatever the others say, and answers the longest wait", async () => {
    const counting = countingStore(stores[0])
    const allowance = (name: LimitName) => (name === 'pushesByAddress' ? 1 : 5)
    // A row as RateLimiterDrizzle left it (same key, 20 s left) is carried on, not restarted.
    await stores[0].db.execute(sql`insert into rate_limits (key, points, expire) values ('pushes:user:u_late', 1, now() + interval '20 seconds')`)
    const push: Take[] = [
      ['pushesByAddress', '192.0.2.9', 1],
      ['pushesByUser', 'u_late', 1],
    ]
    await takeLimits(counting, push, allowance)
    expect(counting.statements).toBe(1)
    const refused = await outcome(takeLimits(counting, push, allowance))
    expect(refused).toBeInstanceOf(A2Error)
    expect((refused as A2Error).message).toMatch(/^too many messages from your address this minute/)
    expect(counting.statements).toBe(2)
    const counts = await rows<{ key: string; points: number; left: number }>(
      stores[0],
      sql`select key, points, extract(epoch from expire - now())::float8 as left from rate_limits where key in ('pushes:ip:192.0.2.9', 'pushes:user:u_late') order by key`,
    )
    expect(counts.map((c) => [c.key, c.points])).toEqual([
      ['pushes:ip:192.0.2.9', 2],
      ['pushes:user:u_late', 3],
    ])
    expect(counts[1].left).toBeLessThan(21)
    // Both over: the answer is the wait that lets the retry through (the address's ~60 s, not the user's ~20 s).
    const both = await outcome(takeLimits(stores[0], push, () => 1))
    expect((both as A2Error).details).toEqual({ retryAfterS: 60 })
    // A window that ended starts again from this take.
    await stores[0].db.execute(sql`update rate_limits set expire = now() - interval '1 second' where key = 'pushes:ip:192.0.2.9'`)
    await takeLimits(stores[0], [['pushesByAddress', '192.0.2.9', 1]], allowance)
    const [restarted] = await rows<{ points: number }>(stores[0], sql`select points from rate_limits where key = 'pushes:ip:192.0.2.9'`)
    expect(restarted.points).toBe(1)
  })

  it('one key named twice in a request is one row taken by the sum (a row cannot be upserted twice in one statement)', async () => {
    await takeLimits(
      stores[0],
      [
        ['pushesByUser', 'u_twice', 1],
        ['pushesByUser', 'u_twice', 2],
      ],
      () => 5,
    )
    const [row] = await rows<{ points: number }>(stores[0], sql`select points from rate_limits where key = 'pushes:user:u_twice'`)
    expect(row.points).toBe(3)
  })

  it("commits without waiting for the WAL, and leaves the connection's own setting alone", async () => {
    const before = await rows<{ setting: string }>(single, sql`select current_setting('synchronous_commit') as setting`)
    await takeLimits(single, [['identitiesByAddress', '192.0.2.10', 1]], () => 5)
    // The same (only) connection: an append after a take still waits for its flush.
    const after = await rows<{ setting: string }>(single, sql`select current_setting('synchronous_commit') as setting`)
    expect(after).toEqual(before)
    expect(before[0].setting).toBe('on')
  })

  it('concurrent takes over shared keys: no key admits more than its allowance, every take is counted, nothing deadlocks', async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            store: fc.integer({ min: 0, max: 1 }),
            address: fc.integer({ min: 0, max: 1 }),
            user: fc.integer({ min: 0, max: 2 }),
            points: fc.integer({ min: 1, max: 2 }),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        async (requests) => {
          const prefix = `r${++run}`
          const allowance = 3
          const outcomes = await Promise.all(
            requests.map((r) =>
              outcome(
                takeLimits(
                  stores[r.store],
                  [
                    ['pushesByAddress', `${prefix}a${r.address}`, r.points],
                    ['pushesByUser', `${prefix}u${r.user}`, r.points],
                  ],
                  () => allowance,
                ),
              ),
            ),
          )
          for (const o of outcomes) if (o !== 'ok') expect((o as A2Error).code).toBe('rate_limited')
          // The model: every take is counted on both of its rows, in some order of the statements.
          const total = (pick: (r: (typeof requests)[number]) => string) => {
            const sums = new Map<string, number>()
            for (const r of requests) sums.set(pick(r), (sums.get(pick(r)) ?? 0) + r.points)
            return sums
          }
          const expected = new Map([
            ...[...total((r) => `pushes:ip:${prefix}a${r.address}`)],
            ...[...total((r) => `pushes:user:${prefix}u${r.user}`)],
          ])
          const stored = await rows<{ key: string; points: number }>(
            stores[0],
            sql`select key, points from rate_limits where key like ${`%:${prefix}%`}`,
          )
          expect(new Map(stored.map((s) => [s.key, s.points]))).toEqual(expected)
          // A request got through only if both its rows were within the allowance after its own take:
          // so no key admitted more than the allowance.
          for (const [key] of expected) {
            const admitted = requests
              .filter((r, i) => outcomes[i] === 'ok' && (key === `pushes:ip:${prefix}a${r.address}` || key === `pushes:user:${prefix}u${r.user}`))
              .reduce((sum, r) => sum + r.points, 0)
            expect(admitted).toBeLessThanOrEqual(allowance)
          }
        },
      ),
      { seed: 20261201, numRuns: kind === 'postgres' ? 40 : 25 },
    )
  })
})
