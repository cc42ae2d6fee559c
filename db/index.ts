/**
 * The process's one database: PGlite in A2_DATA_DIR when DATABASE_URL is unset (the
 * embedded default), the postgres driver otherwise. Kept on globalThis and opened lazily:
 * Next evaluates route bundles and instrumentation as separate module copies, and two
 * PGlite instances on one directory silently lose writes.
 */
import path from 'node:path'
import { openPgliteStore, openPostgresStore, type Store } from '@/lib/a2/server'
import { env } from '@/lib/env'

const MIGRATIONS = path.join(process.cwd(), 'db', 'migrations')

const globalStore = globalThis as unknown as { __a2Store?: Promise<Store> }

export function getStore(): Promise<Store> {
  globalStore.__a2Store ??= openStore().catch((error) => {
    globalStore.__a2Store = undefined
    throw error
  })
  return globalStore.__a2Store
}

async function openStore(): Promise<Store> {
  const { DATABASE_URL, A2_DATA_DIR } = env()
  if (DATABASE_URL) return openPostgresStore(DATABASE_URL, { migrationsFolder: MIGRATIONS })
  // PGlite never fsyncs: a crash can lose its last writes. Production belongs on Postgres.
  return openPgliteStore({ dataDir: path.resolve(A2_DATA_DIR, 'pglite'), migrationsFolder: MIGRATIONS })
}

export async function closeStore(): Promise<void> {
  const pending = globalStore.__a2Store
  globalStore.__a2Store = undefined
  if (pending) await (await pending).close()
}
