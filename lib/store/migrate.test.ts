/**
 * Upgrading a database made before a2 owned its schema: the old layout's migrations (the
 * app's db/migrations 0000–0007, kept in test/fixtures/old-layout-migrations) run by
 * drizzle's migrator, as the app did then, all of them or the first few (a database last
 * opened by an older release); then the current code opens it. Nothing is re-run, data
 * survives, what the old layout had not made yet applies, later migrations of both
 * histories apply, and the result is the same database a fresh start makes.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { createServer, migrate, type Store } from '@/lib/a2/server'
import { MIGRATIONS } from '@/lib/a2/sql'
import { query } from '@/lib/a2/testing'
import { createTestDb, layers, type TestDb } from '@/test/db'
import { testContract } from '@/test/contract'
import { migrateApp, migrateDatabase } from './migrate'

const LEGACY = path.join(process.cwd(), 'test', 'fixtures', 'old-layout-migrations')
const APP = path.join(process.cwd(), 'db', 'migrations')
const A2_IDS = MIGRATIONS.map((m) => m.id)
/** The a2 migrations that map onto old 0000–0004 (tables) and 0001–0002 (functions); 3 and 4 are old 0006 and 0007. */
const BEFORE_CHECKPOINTS = [1, 2]
const AFTER_SPENT_TOKENS = [3, 4]
/** a2 migrations written after the old layout ended (its last is old 0007 = a2's 4): applied, never baselined. */
const SINCE_OLD_LAYOUT = A2_IDS.filter((id) => id > 4)

const rows = <Row>(store: Store, statement: ReturnType<typeof sql>) => query<Row>(store.db, statement)
/**
 * Each test opens its own databases, and opening a PGlite took 7–13 s here with the two
 * cores' load at 15–20 (under 2 s idle); the first test opens two.
 */
const OPENS_DATABASES_MS = 90_000

/** Runs the old layout's first `count` migrations (all when omitted) the way the app did then. */
async function migrateLegacy(store: Store, count?: number): Promise<void> {
  let folder = LEGACY
  if (count !== undefined) {
    folder = scratch()
    cpSync(LEGACY, folder, { recursive: true })
    const journal = JSON.parse(readFileSync(path.join(folder, 'meta', '_journal.json'), 'utf8'))
    journal.entries = journal.entries.slice(0, count)
    writeFileSync(path.join(folder, 'meta', '_journal.json'), JSON.stringify(journal))
  }
  const { migrate: drizzleMigrate } =
    store.kind === 'pglite' ? await import('drizzle-orm/pglite/migrator') : await import('drizzle-orm/postgres-js/migrator')
  await drizzleMigrate(store.db as never, { migrationsFolder: folder })
}

const scratches: string[] = []
function scratch(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'a2-migrations-'))
  scratches.push(dir)
  return dir
}

/** Every object of the public schema, as Postgres describes it (column order aside). */
async function catalog(store: Store): Promise<string[]> {
  const found = await rows<{ line: string }>(
    store,
    sql`select line from (
          select 'column ' || table_name || '.' || column_name || ' ' || concat_ws(' ', data_type, is_nullable, column_default) as line
            from information_schema.columns where table_schema = 'public'
          union all select 'index ' || indexdef from pg_indexes where schemaname = 'public'
          union all select 'constraint ' || conrelid::regclass || '.' || conname || ' ' || pg_get_constraintdef(oid)
            from pg_constraint where connamespace = 'public'::regnamespace
          union all select 'function ' || pg_get_functiondef(oid) from pg_proc where pronamespace = 'public'::regnamespace
          union all select 'trigger ' || pg_get_triggerdef(oid) from pg_trigger where not tgisinternal
        ) c order by line`,
  )
  return found.map((r) => r.line)
}

afterAll(() => {
  for (const dir of scratches) rmSync(dir, { recursive: true, force: true })
})

describe.each(layers)('a database made by the old layout, on %s', (kind) => {
  const dbs: TestDb[] = []
  const open = async () => {
    const testDb = await createTestDb(kind, { migrate: false })
    dbs.push(testDb)
    return testDb.open()
  }
  afterAll(async () => {
    await Promise.all(dbs.map((d) => d.drop()))
  })

  it(
    'is baselined, keeps its data, takes later migrations, and ends up as a fresh database would',
    async () => {
      const store = await open()
      await migrateLegacy(store)
      const server = createServer({ contract: testContract, consumers: [], store })
      const { id } = await server.sessions.create('u1')
      await server.append(id, { type: 'message', payload: { text: 'from before' } })
      await store.db.execute(sql`insert into notes (idempotency_key, owner, session_id, body) values ('k1', 'u1', ${id}, 'kept')`)
      await store.db.execute(sql`insert into spent_tokens (owner, at, tokens) values ('u1', now(), 7)`)
      const [{ drizzleRows }] = await rows<{ drizzleRows: number }>(
        store,
        sql`select count(*)::int as "drizzleRows" from drizzle.__drizzle_migrations`,
      )
      expect(drizzleRows).toBe(8)

      // What the app does at start: a2's migrations, then its own. Nothing runs.
      expect(await migrate(store)).toEqual({ applied: SINCE_OLD_LAYOUT, baselined: A2_IDS.filter((id) => id <= 4) })
      expect(await migrateApp(store)).toEqual([])
      expect(await migrate(store)).toEqual({ applied: [], baselined: [] })

      expect((await server.read(id, 'u1')).map((e) => e.payload)).toEqual([{ text: 'from before' }])
      await server.append(id, { type: 'message', payload: { text: 'after' } })
      expect((await server.read(id, 'u1')).map((e) => e.index)).toEqual([0, 1])
      expect(await rows(store, sql`select body from notes`)).toEqual([{ body: 'kept' }])
      expect(await rows(store, sql`select tokens from spent_tokens`)).toEqual([{ tokens: 7 }])

      // The same objects, definitions and names as a database made from nothing today.
      const fresh = await open()
      await migrateDatabase(fresh)
      const upgraded = await catalog(store)
      expect(upgraded).toEqual(await catalog(fresh))
      for (const object of [
        'FUNCTION public.a2_append_steps_many',
        'INDEX a2_events_finished_at',
        'INDEX spent_tokens_owner_at',
        'column a2_migrations.id',
        'constraint a2_checkpoints.a2_checkpoints_session_id_a2_sessions_id_fk',
        'trigger CREATE TRIGGER a2_jobs_lane_advance',
        'column a2_jobs.lane_blocked',
      ]) {
        expect(
          upgraded.some((line) => line.includes(object)),
          object,
        ).toBe(true) // the comparison saw them
      }

      // Later migrations apply on top: a2's next one, and one drizzle-kit would generate now.
      const later = { id: 100, name: 'later', sql: 'alter table a2_sessions add column later_a text;' }
      expect(await migrate(store, [...MIGRATIONS, later])).toEqual({ applied: [100], baselined: [] })
      const appFolder = scratch()
      cpSync(APP, appFolder, { recursive: true })
      const journalPath = path.join(appFolder, 'meta', '_journal.json')
      const journal = JSON.parse(readFileSync(journalPath, 'utf8'))
      // drizzle-kit dates a migration by the clock; old 0007 was dated by hand, ahead of it, and
      // drizzle applies only what is later than the newest recorded.
      const legacyTimes = JSON.parse(readFileSync(path.join(LEGACY, 'meta', '_journal.json'), 'utf8')).entries.map((e: { when: number }) => e.when)
      const when = Math.max(Date.now(), ...legacyTimes) + 1
      journal.entries.push({ idx: journal.entries.length, version: '7', when, tag: '0099_later', breakpoints: true })
      writeFileSync(journalPath, JSON.stringify(journal))
      writeFileSync(path.join(appFolder, '0099_later.sql'), 'ALTER TABLE "notes" ADD COLUMN "later_b" text;')
      expect(await migrateApp(store, appFolder)).toEqual([when])
      const added = await rows<{ column_name: string }>(
        store,
        sql`select column_name from information_schema.columns where column_name in ('later_a', 'later_b') order by 1`,
      )
      expect(added.map((r) => r.column_name)).toEqual(['later_a', 'later_b'])
    },
    OPENS_DATABASES_MS,
  )

  it(
    'left at the old 0005 (before checkpoints): a2 makes a2_checkpoints and lane heads, the app runs nothing, and it matches a fresh database',
    async () => {
      const store = await open()
      await migrateLegacy(store, 6)
      const server = createServer({ contract: testContract, consumers: [], store })
      const { id } = await server.sessions.create('u1')
      await server.append(id, { type: 'message', payload: { text: 'from before' } })
      expect(await migrate(store)).toEqual({ applied: [...AFTER_SPENT_TOKENS, ...SINCE_OLD_LAYOUT], baselined: BEFORE_CHECKPOINTS })
      expect(await migrateApp(store)).toEqual([])
      expect((await server.read(id, 'u1')).map((e) => e.payload)).toEqual([{ text: 'from before' }])
      const fresh = await open()
      await migrateDatabase(fresh)
      expect(await catalog(store)).toEqual(await catalog(fresh))
    },
    OPENS_DATABASES_MS,
  )

  it(
    'left at the old 0004 (before spent_tokens): a2 is baselined and the app runs only its spent_tokens migration',
    async () => {
      const store = await open()
      await migrateLegacy(store, 5)
      expect(await migrate(store)).toEqual({ applied: [...AFTER_SPENT_TOKENS, ...SINCE_OLD_LAYOUT], baselined: BEFORE_CHECKPOINTS })
      const [spentTokens] = JSON.parse(readFileSync(path.join(APP, 'meta', '_journal.json'), 'utf8')).entries.slice(-1)
      expect(await migrateApp(store)).toEqual([spentTokens.when])
      const [{ exists }] = await rows<{ exists: boolean }>(store, sql`select to_regclass('spent_tokens') is not null as exists`)
      expect(exists).toBe(true)
    },
    OPENS_DATABASES_MS,
  )

  it(
    'left half-way through a2 (old 0000–0002) is refused, with nothing written',
    async () => {
      const store = await open()
      await migrateLegacy(store, 3)
      await expect(migrate(store)).rejects.toThrow(/only part way \(missing 0003_liveness, 0004_security_limits_audit\)/)
      const [{ exists }] = await rows<{ exists: boolean }>(store, sql`select to_regclass('a2_migrations') is not null as exists`)
      expect(exists).toBe(false)
    },
    OPENS_DATABASES_MS,
  )
})
