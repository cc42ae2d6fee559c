/**
 * Test databases: a fresh one per test file, on PGlite (in memory) and, when
 * TEST_DATABASE_URL or DATABASE_URL is set, on real Postgres (a new database, dropped after).
 * Migrated with a2's own migrations; an app's tests pass `migrate` to add its tables.
 */
import { randomUUID } from 'node:crypto'
import postgres from 'postgres'
import { afterAll, beforeAll } from 'vitest'
import { migrate as migrateA2, openPgliteStore, openPostgresStore, type Store } from '@/lib/a2/server'

export const POSTGRES_URL = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL || ''

export interface TestDb {
  kind: 'pglite' | 'postgres'
  url?: string
  open(options?: { max?: number }): Promise<Store>
  drop(): Promise<void>
}

/** The layers this run covers: PGlite always, Postgres when a URL is configured. */
export const layers: Array<'pglite' | 'postgres'> = POSTGRES_URL ? ['pglite', 'postgres'] : ['pglite']

/** How a fresh database gets its tables: a2's by default. */
export type Migrate = (store: Store) => Promise<unknown>

/** `migrate: false`: an empty database, for the migration tests. */
export async function createTestDb(kind: 'pglite' | 'postgres', options: { migrate?: boolean | Migrate } = {}): Promise<TestDb> {
  const migrateWith: Migrate = typeof options.migrate === 'function' ? options.migrate : migrateA2
  let toMigrate = options.migrate !== false // once, by the first open
  if (kind === 'pglite') {
    let store: Store | undefined
    return {
      kind,
      async open() {
        if (store) throw new Error('PGlite has one connection: open it once per test file')
        store = await openPgliteStore()
        if (toMigrate) await migrateWith(store)
        return store
      },
      async drop() {
        await store?.close()
      },
    }
  }
  const name = `a2_test_${randomUUID().replaceAll('-', '').slice(0, 16)}`
  const admin = postgres(POSTGRES_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  await admin.end()
  const url = withDatabase(POSTGRES_URL, name)
  const stores: Store[] = []
  return {
    kind,
    url,
    async open(options = {}) {
      const store = await openPostgresStore(url, { max: options.max })
      stores.push(store)
      if (toMigrate) await migrateWith(store)
      toMigrate = false
      return store
    },
    async drop() {
      await Promise.allSettled(stores.map((s) => s.close()))
      const dropper = postgres(POSTGRES_URL, { max: 1, onnotice: () => {} })
      await dropper.unsafe(`drop database if exists ${name} with (force)`)
      await dropper.end()
    },
  }
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

/** One database for the enclosing describe block: created before its tests, dropped after them. */
export function useTestStore(kind: TestDb['kind'], migrate?: Migrate): () => Store {
  let testDb: TestDb | undefined
  let store: Store | undefined
  beforeAll(async () => {
    testDb = await createTestDb(kind, { migrate: migrate ?? true })
    store = await testDb.open()
  })
  afterAll(async () => {
    await testDb?.drop()
  })
  return () => {
    if (!store) throw new Error('the test store is opened in beforeAll')
    return store
  }
}
