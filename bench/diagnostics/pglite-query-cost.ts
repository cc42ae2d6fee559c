/**
 * Diagnostic (`npx tsx bench/diagnostics/pglite-query-cost.ts`): what one statement costs on
 * PGlite, sent through PGlite's own `query` (parse and plan every time, six calls into the
 * WASM; with drizzle's parsers too, as drizzle sends it) and through the store's named
 * statements (lib/a2/internal/pglite-prepared.ts: Bind, Describe, Execute, Sync as one call).
 * Two statements: a one-row select by key, and the worker's claim (nothing to claim).
 * Per call: wall time and the part of it spent inside the WASM. In-process, one at a time.
 */
import { performance } from 'node:perf_hooks'
import { PGlite } from '@electric-sql/pglite'
import { drizzle } from 'drizzle-orm/pglite'
import { PgDialect } from 'drizzle-orm/pg-core'
import { timePgliteWasm } from '../lib/pglite-wasm'
import { claimStatement } from '@/lib/a2/internal/jobs'
import { preparedPglite } from '@/lib/a2/internal/pglite-prepared'
import { migrate, type Store } from '@/lib/a2/server'

const pg = await PGlite.create()
await migrate({ kind: 'pglite', db: drizzle(pg) as unknown as Store['db'], listen: async () => async () => {}, close: () => pg.close() })
const prepared = preparedPglite(pg)

let wasm = 0
timePgliteWasm((ms) => (wasm += ms))

const claim = new PgDialect().sqlToQuery(
  claimStatement({ consumers: ['generate'], owner: 'w1', ownerKey: 1, resume: true, leaseMs: { generate: 15_000 }, limit: 16 }),
)
// drizzle's parsers, as it passes them with every statement (dates and intervals kept as text).
const drizzleOptions = {
  rowMode: 'array' as const,
  parsers: Object.fromEntries([1114, 1184, 1186, 1082, 1231, 1115, 1185, 1187, 1182].map((oid) => [oid, (v: string) => v])),
}

async function time(label: string, n: number, fn: () => Promise<unknown>) {
  for (let i = 0; i < 50; i++) await fn()
  wasm = 0
  const t0 = performance.now()
  for (let i = 0; i < n; i++) await fn()
  const us = (1000 * (performance.now() - t0)) / n
  console.log(`${label.padEnd(44)} ${us.toFixed(0).padStart(6)} µs a call, WASM ${((1000 * wasm) / n).toFixed(0).padStart(5)} µs`)
}
const one = 'select status from a2_jobs where id = $1'
for (let round = 1; round <= 3; round++) {
  console.log(`round ${round}`)
  await time('one-row select: PGlite query, drizzle parsers', 2_000, () => pg.query(one, [1], drizzleOptions))
  await time('one-row select: PGlite query', 2_000, () => pg.query(one, [1]))
  await time('one-row select: named statement', 2_000, () => prepared.query(one, [1], drizzleOptions))
  await time('claim: PGlite query', 500, () => pg.query(claim.sql, claim.params, drizzleOptions))
  await time('claim: named statement', 500, () => prepared.query(claim.sql, claim.params, drizzleOptions))
}
await pg.close()
