import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import type { Store } from '@/lib/a2/server'
import { createTestDb, POSTGRES_URL, type TestDb } from '@/test/db'
import { query } from './internal/store'

// Prepared statements are a postgres-js matter: PGlite has no such layer.
describe.skipIf(!POSTGRES_URL)('the Postgres store', () => {
  let testDb: TestDb
  let store: Store

  beforeAll(async () => {
    testDb = await createTestDb('postgres')
    store = await testDb.open({ max: 1 }) // one connection: its prepared statements are the ones we count
  })
  afterAll(async () => {
    await testDb.drop()
  })

  const prepared = async () =>
    (await query<{ n: number }>(store.db, sql`select count(*)::int as n from pg_prepared_statements where statement !~* '^(begin|commit)'`))[0].n

  it('prepares statements, in transactions too, so a repeated one is a single round trip', async () => {
    const before = await prepared()
    for (let i = 0; i < 3; i++) await query(store.db, sql`select ${i}::int as repeated_outside`)
    await store.db.transaction(async (tx) => {
      for (let i = 0; i < 3; i++) await query(tx, sql`select ${i}::int as repeated_inside`)
    })
    // Each text once, however often it ran (the driver's own begin/commit left out).
    expect((await prepared()) - before).toBe(2)
  })

  it('prepares at most 500 distinct statement texts; the rest still run, unprepared', async () => {
    for (let i = 0; i < 700; i++) {
      const [row] = await query<{ v: number }>(store.db, sql`select ${i}::int as ${sql.raw(`v`)}, ${sql.raw(String(i))} as distinct_text`)
      expect(row.v).toBe(i)
    }
    // The driver prepares its own transaction control (begin, commit …) outside the budget.
    const [ours] = await query<{ n: number; distinct: number }>(
      store.db,
      sql`select count(*)::int as n, count(*) filter (where statement like '%distinct_text')::int as distinct
          from pg_prepared_statements where statement !~* '^(begin|commit|rollback|savepoint|release)'`,
    )
    expect(ours.n).toBeLessThanOrEqual(500)
    expect(ours.distinct).toBeGreaterThan(400) // prepared up to the budget, not refused altogether
  })
})
