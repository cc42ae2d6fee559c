/**
 * Databases made before a2 owned its schema. Until then a2's DDL lived in the app's
 * drizzle migrations (db/migrations 0000–0007 of a2 chat, recorded in
 * drizzle.__drizzle_migrations by their journal time, `created_at`). Such a database has
 * a2's tables but no a2_migrations: each a2 migration whose objects those old migrations
 * created is recorded as applied without running it (a baseline); later ones apply as usual.
 */
import { sql } from 'drizzle-orm'
import { query, type Executor } from './store'

/**
 * For each a2 migration, the old drizzle migrations (their journal `when`) that made the same
 * objects. Old 0001 made a2_append_steps, which old 0002 replaced; old 0005 was the app's alone.
 * A database may stop at any old migration: those after it apply as a2 migrations.
 */
export const LEGACY_SOURCES: ReadonlyMap<number, ReadonlyArray<{ tag: string; when: number }>> = new Map([
  [
    1,
    [
      { tag: '0000_init', when: 1796017644141 },
      { tag: '0003_liveness', when: 1796118214241 },
      { tag: '0004_security_limits_audit', when: 1796120314589 },
    ],
  ],
  [
    2,
    [
      { tag: '0001_append_steps', when: 1796023391868 },
      { tag: '0002_append_steps_many', when: 1796028173761 },
    ],
  ],
  [3, [{ tag: '0006_checkpoints', when: 1796125707186 }]],
  [4, [{ tag: '0007_lane_heads', when: 1796130000000 }]],
])

/**
 * The a2 migrations this database already holds, by the old layout's record; [] for a
 * database without a2's tables. Throws on a database the old layout left half-way (an a2
 * migration only partly made): that one cannot be applied nor skipped.
 */
export async function legacyApplied(tx: Executor): Promise<number[]> {
  const [{ tables, journal }] = await query<{ tables: boolean; journal: boolean }>(
    tx,
    sql`select to_regclass('a2_sessions') is not null as tables,
               to_regclass('drizzle.__drizzle_migrations') is not null as journal`,
  )
  if (!tables) return []
  if (!journal) {
    throw new Error('a2: this database has a2_sessions but no record of its migrations (a2_migrations or drizzle.__drizzle_migrations)')
  }
  const rows = await query<{ created_at: string | number }>(tx, sql`select created_at from drizzle.__drizzle_migrations`)
  const recorded = new Set(rows.map((r) => Number(r.created_at)))
  const applied: number[] = []
  for (const [id, sources] of LEGACY_SOURCES) {
    const present = sources.filter((s) => recorded.has(s.when))
    if (present.length === sources.length) applied.push(id)
    else if (present.length > 0) {
      const missing = sources.filter((s) => !recorded.has(s.when)).map((s) => s.tag)
      throw new Error(
        `a2: this database was migrated by the old layout only part way (missing ${missing.join(', ')}); ` +
          'open it once with a release from before a2 owned its schema to finish them',
      )
    }
  }
  return applied
}
