/**
 * The process's one database: PGlite in A2_DATA_DIR when DATABASE_URL is unset (the
 * embedded default), the postgres driver otherwise, migrated (a2's tables, then the app's:
 * migrate.ts). Kept on globalThis and opened lazily: Next evaluates route bundles and
 * instrumentation as separate module copies, and two PGlite instances on one directory
 * silently lose writes.
 *
 * The app's door to its database: app code (app/, lib/chat, lib/http) takes the store from
 * here and the app's tables from @/db/schema; a2's tables come from @/lib/a2/server. lib/a2
 * never imports db/.
 */
import path from 'node:path'
import { openPgliteStore, openPostgresStore, type Store } from '@/lib/a2/server'
import { env } from '@/lib/env'
import { migrateDatabase } from './migrate'

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
  const store = DATABASE_URL
    ? await openPostgresStore(DATABASE_URL)
    : // PGlite never fsyncs: a crash can lose its last writes. Production belongs on Postgres.
      await openPgliteStore({ dataDir: path.resolve(A2_DATA_DIR, 'pglite') })
  try {
    await migrateDatabase(store)
  } catch (error) {
    await store.close().catch(() => {})
    throw error
  }
  return store
}

export async function closeStore(): Promise<void> {
  const pending = globalStore.__a2Store
  globalStore.__a2Store = undefined
  if (pending) await (await pending).close()
}
