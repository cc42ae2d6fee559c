/**
 * Migrations at start: a2's first (its tables, lib/a2/sql), then the app's own (db/schema.ts
 * → drizzle-kit → db/migrations), which may refer to a2's tables (0000 indexes a2_events).
 *
 * The app's history is drizzle's: its journal and `drizzle.__drizzle_migrations`, so
 * drizzle-kit's tooling keeps working. Drizzle applies what is newer than the newest
 * recorded journal time; a migration drizzle-kit generates gets the time of its generation.
 *
 * Drizzle's own migrator is not used: it cannot hold a lock across its read of the last
 * migration and its writes, and two processes starting together on one Postgres would
 * both apply. This is its rule, in one transaction under an advisory lock.
 */
import path from 'node:path'
import { sql } from 'drizzle-orm'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import { migrate as migrateA2, type Store } from '@/lib/a2/server'

const MIGRATIONS = path.join(process.cwd(), 'db', 'migrations')
/** The app's migrations' advisory lock: one bigint key, which Postgres keeps apart from a2's two-int keys. */
const APP_MIGRATION_LOCK = 4242

export async function migrateDatabase(store: Store, migrationsFolder = MIGRATIONS): Promise<void> {
  await migrateA2(store)
  await migrateApp(store, migrationsFolder)
}

/** Applies the app's migrations not yet applied; returns the journal times (`when`) of those it ran. */
export async function migrateApp(store: Store, migrationsFolder = MIGRATIONS): Promise<number[]> {
  const migrations = readMigrationFiles({ migrationsFolder })
  return store.db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${APP_MIGRATION_LOCK})`)
    await tx.execute(sql`create schema if not exists drizzle`)
    await tx.execute(sql`create table if not exists drizzle.__drizzle_migrations (id serial primary key, hash text not null, created_at bigint)`)
    const result = (await tx.execute(sql`select max(created_at) as last from drizzle.__drizzle_migrations`)) as unknown
    const [{ last }] = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Array<{ last: string | null }>
    const applied: number[] = []
    for (const migration of migrations) {
      if (last !== null && Number(last) >= migration.folderMillis) continue
      for (const statement of migration.sql) if (statement.trim()) await tx.execute(sql.raw(statement))
      await tx.execute(sql`insert into drizzle.__drizzle_migrations (hash, created_at) values (${migration.hash}, ${migration.folderMillis})`)
      applied.push(migration.folderMillis)
    }
    return applied
  })
}
