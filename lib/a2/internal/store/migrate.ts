/**
 * `migrate(store)`: creates and upgrades a2's tables and functions (../sql). Call it once at
 * start, before anything else uses the store; the app's own migrations come after it.
 *
 * Everything pending is applied in one transaction that first takes a transaction-level
 * advisory lock: processes starting together against one Postgres queue on it, and the
 * second finds the work done (on PGlite, one process's database, the lock is uncontended).
 * A failed statement rolls back every migration of that call; none is half-applied.
 */
import { sql } from 'drizzle-orm'
import { MIGRATIONS, type Migration } from '../../sql'
import { splitStatements } from './split-sql'
import { LIFE_LOCK_CLASS, query, type Store } from './store'

/** pg_advisory_xact_lock(LIFE_LOCK_CLASS, 0): liveness keys are 1 … 2^31-2, so 0 is free for this. */
const MIGRATION_LOCK_KEY = 0

export interface MigrateResult {
  /** Migrations run by this call, in order. */
  applied: number[]
}

export async function migrate(store: Store, migrations: readonly Migration[] = MIGRATIONS): Promise<MigrateResult> {
  checkOrder(migrations)
  return store.db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${LIFE_LOCK_CLASS}, ${MIGRATION_LOCK_KEY})`)
    const [{ exists }] = await query<{ exists: boolean }>(tx, sql`select to_regclass('a2_migrations') is not null as exists`)
    if (!exists) {
      await tx.execute(sql`
        create table a2_migrations (
          id integer primary key,
          name text not null,
          applied_at timestamptz not null default now()
        )`)
    }
    const done = new Set((await query<{ id: number }>(tx, sql`select id from a2_migrations`)).map((r) => r.id))
    const newer = [...done].filter((id) => !migrations.some((m) => m.id === id))
    if (newer.length > 0) {
      // Running older code on a newer schema could write rows the newer code cannot read.
      throw new Error(`a2: the database has migrations this code does not know (${newer.join(', ')}): run the newer release`)
    }
    const applied: number[] = []
    for (const migration of migrations) {
      if (done.has(migration.id)) continue
      for (const statement of splitStatements(migration.sql)) await tx.execute(sql.raw(statement))
      await record(tx, migration)
      applied.push(migration.id)
    }
    return { applied }
  })
}

async function record(tx: Pick<Store['db'], 'execute'>, migration: Migration): Promise<void> {
  await tx.execute(sql`insert into a2_migrations (id, name) values (${migration.id}, ${migration.name})`)
}

function checkOrder(migrations: readonly Migration[]): void {
  migrations.forEach((m, i) => {
    if (i > 0 && m.id <= migrations[i - 1].id) throw new Error(`a2: migration ids must increase: ${migrations[i - 1].id} then ${m.id}`)
  })
}
