/**
 * The bench's database: a fresh Postgres database per run (from BENCH_DATABASE_URL ||
 * TEST_DATABASE_URL || the local default), migrated, dropped at the end; or an in-memory
 * PGlite with `--pglite`.
 */
import { sql } from 'drizzle-orm'
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { openPgliteStore, openPostgresStore, type Store } from '@/lib/a2/server'
import { migrateDatabase } from '@/lib/store/migrate'
export const ADMIN_URL = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'

export interface BenchDb {
  name: string
  url: string
  drop(): Promise<void>
}

export async function createBenchDb(): Promise<BenchDb> {
  const name = `a2_bench_${process.pid}_${randomBytes(4).toString('hex')}`
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {}, connect_timeout: 5 })
  try {
    await dropOrphans(admin)
    await admin.unsafe(`create database ${name}`)
  } finally {
    await admin.end({ timeout: 2 })
  }
  const url = withDatabase(ADMIN_URL, name)
  // Migrate once, here; every process after that opens the store without migrating.
  const store = await openPostgresStore(url, { max: 1 })
  try {
    await migrateDatabase(store) // the chat's own tables too: the rigs run the chat's server
  } finally {
    await store.close()
  }
  let dropped = false
  return {
    name,
    url,
    async drop() {
      if (dropped) return
      dropped = true
      const dropper = postgres(ADMIN_URL, { max: 1, onnotice: () => {}, connect_timeout: 5 })
      try {
        await dropper.unsafe(`drop database if exists ${name} with (force)`)
      } finally {
        await dropper.end({ timeout: 2 })
      }
    },
  }
}

/**
 * Databases an earlier bench run left behind when it was killed outright (SIGKILL gives no
 * chance to clean up): named a2_bench_<pid>_…, their process gone and nobody connected.
 */
async function dropOrphans(admin: postgres.Sql): Promise<void> {
  const rows = await admin<{ datname: string }[]>`
    select datname from pg_database d
    where datname ~ '^a2_bench_[0-9]+_[0-9a-f]+$'
      and not exists (select 1 from pg_stat_activity a where a.datname = d.datname)`
  for (const { datname } of rows) {
    const pid = Number(datname.split('_')[2])
    let alive = true
    try {
      process.kill(pid, 0)
    } catch (error) {
      alive = (error as NodeJS.ErrnoException).code !== 'ESRCH' // EPERM: alive, someone else's
    }
    if (!alive) await admin.unsafe(`drop database if exists ${datname}`).catch(() => {})
  }
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

export async function serverVersion(url: string): Promise<string> {
  const client = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 })
  try {
    const [row] =
      await client`select current_setting('server_version') as v, current_setting('synchronous_commit') as sc, current_setting('max_connections') as mc`
    return `PostgreSQL ${row.v} (synchronous_commit=${row.sc}, max_connections=${row.mc})`
  } finally {
    await client.end({ timeout: 2 })
  }
}

/** Opens a store: Postgres on the bench database, or a fresh in-memory PGlite (migrated). */
export async function openBenchStore(kind: 'postgres' | 'pglite', url?: string, options: { max?: number; app?: string } = {}): Promise<Store> {
  if (kind === 'pglite') {
    const store = await openPgliteStore()
    await migrateDatabase(store)
    return store
  }
  return openPostgresStore(options.app ? withApp(url!, options.app) : url!, { max: options.max })
}

/** Names this process's connections in pg_stat_activity (the database sampler groups by it). */
export function withApp(url: string, app: string): string {
  const parsed = new URL(url)
  parsed.searchParams.set('application_name', app)
  return parsed.toString()
}

/** Rows of a raw statement on either driver (postgres-js answers an array, PGlite `{ rows }`). */
export async function rows<Row = Record<string, any>>(store: Store, statement: import('drizzle-orm').SQL): Promise<Row[]> {
  const result = (await store.db.execute(statement)) as unknown
  return (Array.isArray(result) ? result : (result as { rows: Row[] }).rows) as Row[]
}

/**
 * The Postgres processes whose CPU a figure counts (machine.ts pidsCpu): the bench
 * database's backends and the server's background processes, not other databases' backends.
 */
export function postgresPids(store: Store): () => Promise<number[]> {
  return async () =>
    (
      await rows<{ pid: number }>(
        store,
        sql`select pid from pg_stat_activity where datname = current_database() or (datname is null and backend_type <> 'client backend')`,
      )
    ).map((row) => Number(row.pid))
}
