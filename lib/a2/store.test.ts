import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import type { Store } from '@/lib/a2/server'
import { createTestDb, POSTGRES_URL, useTestStore, type TestDb } from './test-kit/db'
import { query, sqlState } from './internal/store/store'

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

// PGlite parses and plans a statement's text on every `query` (six calls into its WASM): the
// store keeps named statements there too (internal/store/pglite-prepared.ts).
describe('the PGlite store', () => {
  const store = useTestStore('pglite')

  const prepared = async () =>
    (await query<{ n: number }>(store().db, sql`select count(*)::int as n from pg_prepared_statements where name like ${'a2_%'}`))[0].n

  it('prepares statements with parameters, in transactions too, each text once', async () => {
    const before = await prepared()
    for (let i = 0; i < 3; i++) await query(store().db, sql`select ${i}::int as repeated_outside`)
    await store().db.transaction(async (tx) => {
      for (let i = 0; i < 3; i++) await query(tx, sql`select ${i}::int as repeated_inside`)
    })
    // The count's own text was prepared by the first count.
    expect((await prepared()) - before).toBe(2)
  })

  it('answers as PGlite itself does: parameters and results of every type a2 and the app use', async () => {
    const at = new Date('2026-12-01T10:11:12.345Z')
    const statement = sql`select ${42}::int as i, ${'9007199254740993'}::bigint as big, ${true}::boolean as b, ${null}::text as nothing,
      ${JSON.stringify({ a: [1, 'x'], n: null })}::jsonb as j, ${at}::timestamptz as ts, now() - now() as gap,
      ${'2026-12-01'}::date as d, array[1, 2]::int[] as ints, ${'tëxt ✓'}::text as t`
    const ours = await query(store().db, statement)
    // The same statement through PGlite's own `query` on a database of its own, with the parsers drizzle passes.
    const { PgDialect } = await import('drizzle-orm/pg-core')
    const { sql: text, params } = new PgDialect().sqlToQuery(statement)
    const { PGlite } = await import('@electric-sql/pglite')
    const plain = await PGlite.create()
    try {
      const theirs = await plain.query(text, params, {
        rowMode: 'object',
        parsers: { 1184: (v: string) => v, 1082: (v: string) => v, 1186: (v: string) => v },
      })
      expect(ours).toEqual(theirs.rows)
    } finally {
      await plain.close()
    }
  })

  it('a statement Postgres refuses fails with its SQLSTATE, is not kept, and runs once it can', async () => {
    const missing = sql`select n from pglite_prepared_later where n = ${1}`
    const failed = await query(store().db, missing).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(sqlState(failed)).toBe('42P01') // undefined_table
    await store().db.execute(sql`create table pglite_prepared_later (n int)`)
    await store().db.execute(sql`insert into pglite_prepared_later values (${1})`)
    expect(await query(store().db, missing)).toEqual([{ n: 1 }])
    // A refused statement inside a transaction rolls it back whole.
    const inTx = await store()
      .db.transaction(async (tx) => {
        await tx.execute(sql`insert into pglite_prepared_later values (${2})`)
        await tx.execute(sql`insert into pglite_prepared_later values (${'not a number'})`)
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      )
    expect(sqlState(inTx)).toBe('22P02') // invalid_text_representation
    expect(await query(store().db, sql`select count(*)::int as n from pglite_prepared_later where n > ${0}`)).toEqual([{ n: 1 }])
  })

  it('a prepared statement delivers its NOTIFY to the store’s listeners', async () => {
    const heard: string[] = []
    const unlisten = await store().listen('pglite_prepared', (payload) => heard.push(payload))
    try {
      await store().db.execute(sql`select pg_notify(${'pglite_prepared'}, ${'one'})`)
      await store().db.execute(sql`select pg_notify(${'pglite_prepared'}, ${'two'})`)
      await expect.poll(() => heard).toEqual(['one', 'two'])
    } finally {
      await unlisten()
    }
  })

  it('prepares at most 500 distinct statement texts; the rest still run, unprepared', async () => {
    for (let i = 0; i < 600; i++) {
      const [row] = await query<{ v: number }>(store().db, sql`select ${i}::int as v, ${sql.raw(String(i))} as distinct_text`)
      expect(row.v).toBe(i)
    }
    expect(await prepared()).toBe(500)
  })
})
