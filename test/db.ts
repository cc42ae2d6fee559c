/**
 * The app's test databases: a2's test databases (a fresh one per test file, PGlite and, with
 * TEST_DATABASE_URL, Postgres) migrated as the app migrates at start: a2's tables, then its own.
 */
import type { Store } from '@/lib/a2/server'
import { createTestDb as createA2TestDb, useTestStore as useA2TestStore, type TestDb } from '@/lib/a2/test-kit/db'
import { migrateDatabase } from '@/lib/store/migrate'

export { layers, POSTGRES_URL, withDatabase, type TestDb } from '@/lib/a2/test-kit/db'

/** `migrate: false`: an empty database, for the migration tests. */
export function createTestDb(kind: TestDb['kind'], options: { migrate?: boolean } = {}): Promise<TestDb> {
  return createA2TestDb(kind, { migrate: options.migrate === false ? false : migrateDatabase })
}

/** One database with the app's tables for the enclosing describe block. */
export function useTestStore(kind: TestDb['kind']): () => Store {
  return useA2TestStore(kind, migrateDatabase)
}
