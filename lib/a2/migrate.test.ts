/**
 * a2's own migrations (lib/a2/sql, internal/store/migrate.ts) on an empty database: applied once,
 * in order, atomically, one process at a time; and the drizzle declarations in schema.ts
 * describe what they make. The app's start (a2's, then its own) is lib/store/migrate.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { getTableConfig, type PgTable } from 'drizzle-orm/pg-core'
import { createServer, migrate, schema, type Store } from '@/lib/a2/server'
import { createTestDb, layers, type TestDb } from './test-kit/db'
import { testContract } from './test-kit/contract'
import { MIGRATIONS } from './sql'
import { query } from './internal/store/store'
import { LEASED_STATUSES, OPEN_STATUSES, STOPPED_STATUSES } from './internal/core/transitions'

const rows = <Row>(store: Store, statement: ReturnType<typeof sql>) => query<Row>(store.db, statement)
const applied = async (store: Store) => rows<{ id: number; name: string }>(store, sql`select id, name from a2_migrations order by id`)

describe.each(layers)('migrate on %s', (kind) => {
  let testDb: TestDb
  let store: Store

  beforeAll(async () => {
    testDb = await createTestDb(kind, { migrate: false })
    store = await testDb.open()
  })
  afterAll(async () => {
    await testDb.drop()
  })

  it('makes an empty database usable, records each migration, and a second call does nothing', async () => {
    const [{ before }] = await rows<{ before: boolean }>(store, sql`select to_regclass('a2_sessions') is not null as before`)
    expect(before).toBe(false)
    expect(await migrate(store)).toEqual({ applied: MIGRATIONS.map((m) => m.id) })
    expect(await applied(store)).toEqual(MIGRATIONS.map(({ id, name }) => ({ id, name })))
    expect(await migrate(store)).toEqual({ applied: [] })

    // The library alone, without any app table: append and read back.
    const server = createServer({ contract: testContract, consumers: [], store })
    const { id } = await server.sessions.create('u1')
    await server.append(id, { type: 'message', payload: { text: 'hi' } })
    expect((await server.read(id, 'u1')).map((e) => e.type)).toEqual(['message'])
  })

  it('applies a later migration, and rolls back every migration of a call when one statement fails', async () => {
    const later = { id: 100, name: 'later', sql: 'alter table a2_sessions add column later_a text;' }
    const broken = { id: 101, name: 'broken', sql: 'create table a2_made_then_undone (x int);\nselect no_such_function();' }
    await expect(migrate(store, [...MIGRATIONS, later, broken])).rejects.toThrow(/no_such_function/)
    const [made] = await rows<{ later: boolean; undone: boolean }>(
      store,
      sql`select exists (select 1 from information_schema.columns where table_name = 'a2_sessions' and column_name = 'later_a') as later,
                 to_regclass('a2_made_then_undone') is not null as undone`,
    )
    expect(made).toEqual({ later: false, undone: false })
    expect((await applied(store)).map((m) => m.id)).toEqual(MIGRATIONS.map((m) => m.id))

    expect(await migrate(store, [...MIGRATIONS, later])).toEqual({ applied: [100] })
    expect((await applied(store)).map((m) => m.id)).toEqual([...MIGRATIONS.map((m) => m.id), 100])
    // Code that does not know migration 100 refuses to run on this database.
    await expect(migrate(store)).rejects.toThrow(/does not know \(100\)/)
  })
})

describe.skipIf(!layers.includes('postgres'))('migrate, several processes starting at once on Postgres', () => {
  let testDb: TestDb
  const stores: Store[] = []

  beforeAll(async () => {
    testDb = await createTestDb('postgres', { migrate: false })
    for (let i = 0; i < 4; i++) stores.push(await testDb.open({ max: 2 }))
  })
  afterAll(async () => {
    await testDb.drop()
  })

  it('applies each migration once: the others wait on the lock and find the work done', async () => {
    const results = await Promise.all(stores.map((s) => migrate(s)))
    expect(results.flatMap((r) => r.applied).sort((a, b) => a - b)).toEqual(MIGRATIONS.map((m) => m.id))
    expect(results.filter((r) => r.applied.length > 0)).toHaveLength(1)
    expect((await applied(stores[0])).map((m) => m.id)).toEqual(MIGRATIONS.map((m) => m.id))
  })
})

describe.each(layers)('schema.ts and the migrated database on %s', (kind) => {
  let testDb: TestDb
  let store: Store

  beforeAll(async () => {
    testDb = await createTestDb(kind, { migrate: false })
    store = await testDb.open()
    await migrate(store)
  })
  afterAll(async () => {
    await testDb.drop()
  })

  const tables: PgTable[] = [
    schema.sessions,
    schema.events,
    schema.jobs,
    schema.jobTransitions,
    schema.effects,
    schema.checkpoints,
    schema.checkpointPieces,
  ]

  it.each(tables.map((t) => [getTableConfig(t).name, t] as const))('%s: the same columns, types, nullability and indexes', async (name, table) => {
    const config = getTableConfig(table)
    const declared = config.columns
      .map((c) => ({
        column: c.name,
        type: c.getSQLType().replace(/^bigserial$/, 'bigint'),
        nullable: !c.notNull,
        hasDefault: c.hasDefault,
      }))
      .sort((a, b) => a.column.localeCompare(b.column))
    const actual = await rows<{ column: string; type: string; nullable: boolean; hasDefault: boolean }>(
      store,
      sql`select column_name as column, data_type as type, is_nullable = 'YES' as nullable, column_default is not null as "hasDefault"
          from information_schema.columns where table_schema = current_schema() and table_name = ${name}
          order by column_name`,
    )
    expect(actual).toEqual(declared)

    const indexes = await rows<{ name: string }>(
      store,
      sql`select indexname as name from pg_indexes where schemaname = current_schema() and tablename = ${name}
            and indexname not like '%\_pkey' and indexname not like '%\_pk' order by indexname`,
    )
    expect(indexes.map((i) => i.name)).toEqual(config.indexes.map((i) => i.config.name).sort())
  })

  it("keeps the status lists of its SQL equal to transitions.ts's (a changed constant needs a new migration)", async () => {
    const inList = (statuses: readonly string[]) => `(${statuses.map((s) => `'${s}'`).join(', ')})`
    const [{ body }] = await rows<{ body: string }>(store, sql`select pg_get_functiondef('a2_step_refusal'::regproc) as body`)
    expect(body).toContain(`j.status in ${inList(LEASED_STATUSES)}`)
    expect(body).toContain(`j.status in ${inList(STOPPED_STATUSES)}`)
    const [{ predicate }] = await rows<{ predicate: string }>(
      store,
      sql`select pg_get_expr(indpred, indrelid) as predicate from pg_index where indexrelid = 'a2_jobs_session_open'::regclass`,
    )
    expect(predicate).toBe(`(status = ANY (ARRAY[${OPEN_STATUSES.map((s) => `'${s}'::text`).join(', ')}]))`)
    for (const lane of ['a2_lane_enqueue', 'a2_lane_advance']) {
      const [{ body: trigger }] = await rows<{ body: string }>(store, sql`select pg_get_functiondef(${lane}::regproc) as body`)
      expect(trigger).toContain(`status IN ${inList(OPEN_STATUSES)}`)
    }
  })
})
