/**
 * The app's start: a2's migrations, then the app's own (db/migrations, drizzle-kit's
 * journal). A fresh database comes out usable, a second start runs nothing, and a
 * migration drizzle-kit generates later applies on top of what is there.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { createServer, migrate, type Store } from '@/lib/a2/server'
import { query, testContract } from '@/lib/a2/testing'
import { createTestDb, layers, type TestDb } from '@/test/db'
import { migrateApp, migrateDatabase } from './migrate'

const APP = path.join(process.cwd(), 'db', 'migrations')
const journalTimes = (folder: string): number[] =>
  JSON.parse(readFileSync(path.join(folder, 'meta', '_journal.json'), 'utf8')).entries.map((e: { when: number }) => e.when)
const rows = <Row>(store: Store, statement: ReturnType<typeof sql>) => query<Row>(store.db, statement)
/** Opening a PGlite took 7–13 s here with the two cores' load at 15–20 (under 2 s idle). */
const OPENS_DATABASES_MS = 90_000

const scratches: string[] = []
afterAll(() => {
  for (const dir of scratches) rmSync(dir, { recursive: true, force: true })
})

describe.each(layers)("the app's migrations, on %s", (kind) => {
  let testDb: TestDb | undefined
  afterAll(async () => {
    await testDb?.drop()
  })

  it(
    'make a fresh database usable, run nothing at the next start, and take a later drizzle-kit migration',
    async () => {
      testDb = await createTestDb(kind, { migrate: false })
      const store = await testDb.open()
      await migrateDatabase(store)
      expect(await migrate(store)).toEqual({ applied: [] })
      expect(await migrateApp(store)).toEqual([])

      const server = createServer({ contract: testContract, consumers: [], store })
      const { id } = await server.sessions.create('u1')
      await server.append(id, { type: 'message', payload: { text: 'hello' } })
      await store.db.execute(sql`insert into notes (idempotency_key, owner, session_id, body) values ('k1', 'u1', ${id}, 'kept')`)
      await store.db.execute(sql`insert into spent_tokens (owner, at, tokens) values ('u1', now(), 7)`)
      const [{ recorded }] = await rows<{ recorded: number }>(store, sql`select count(*)::int as recorded from drizzle.__drizzle_migrations`)
      expect(recorded).toBe(journalTimes(APP).length)

      // drizzle-kit dates a migration by the clock: one generated now is later than every recorded one.
      const folder = mkdtempSync(path.join(tmpdir(), 'a2-migrations-'))
      scratches.push(folder)
      cpSync(APP, folder, { recursive: true })
      const journalPath = path.join(folder, 'meta', '_journal.json')
      const journal = JSON.parse(readFileSync(journalPath, 'utf8'))
      const when = Math.max(Date.now(), ...journalTimes(APP)) + 1
      journal.entries.push({ idx: journal.entries.length, version: '7', when, tag: '0099_later', breakpoints: true })
      writeFileSync(journalPath, JSON.stringify(journal))
      writeFileSync(path.join(folder, '0099_later.sql'), 'ALTER TABLE "notes" ADD COLUMN "later" text;')
      expect(await migrateApp(store, folder)).toEqual([when])
      expect(await migrateApp(store, folder)).toEqual([])

      const [{ columns }] = await rows<{ columns: number }>(
        store,
        sql`select count(*)::int as columns from information_schema.columns where table_name = 'notes' and column_name = 'later'`,
      )
      expect(columns).toBe(1)
      expect(await rows(store, sql`select body from notes`)).toEqual([{ body: 'kept' }])
      expect((await server.read(id, 'u1')).map((e) => e.payload)).toEqual([{ text: 'hello' }])
    },
    OPENS_DATABASES_MS,
  )
})
