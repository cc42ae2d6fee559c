/**
 * Diagnostic (`npx tsx bench/diagnostics/claim-statements.ts [jobs]`): the statements a worker
 * sends per no-op job, by kind, and the time each kind spent in flight (summed over
 * concurrent statements, so more than the wall clock). Figure 4's setup without lanes: jobs
 * queued in one transaction, one worker with the library's defaults. The bare SKIP LOCKED
 * loop of figure 4 sends one claim per batch and one completing UPDATE per job.
 */
import { performance } from 'node:perf_hooks'
import { sql } from 'drizzle-orm'
import { createServer, type Store } from '@/lib/a2/server'
import { interceptStore } from '@/test/runtime'
import { createBenchDb, openBenchStore } from '../lib/db'
import { OWNER } from '../lib/http'
import { until } from '../lib/time'
import { benchContract, noopConsumers } from '../lib/wake-contract'

const JOBS = Number(process.argv[2] ?? 1500)

/** A statement's kind: its first distinctive words. */
function kindOf(text: string): string {
  if (text.includes('claimed as (')) return 'claim'
  if (text.includes('unsettled as (')) return 'finishRun (complete)'
  if (text.includes('from a2_jobs j join a2_events e')) return 'start state read'
  if (text.startsWith('update a2_jobs set lease_until')) return 'renew lease'
  return text.replace(/\s+/g, ' ').slice(0, 60)
}

const db = await createBenchDb()
const base = await openBenchStore('postgres', db.url)
const counts = new Map<string, { n: number; ms: number }>()
let counting = false
const started = new Map<string, number[]>()
const store: Store = interceptStore(base, {
  before: (text) => {
    if (!counting) return
    const list = started.get(text) ?? []
    list.push(performance.now())
    started.set(text, list)
  },
  after: (text) => {
    const t0 = started.get(text)?.shift()
    if (!counting || t0 === undefined) return
    const kind = kindOf(text)
    const c = counts.get(kind) ?? { n: 0, ms: 0 }
    c.n++
    c.ms += performance.now() - t0
    counts.set(kind, c)
  },
})
try {
  let runs = 0
  const server = createServer({ contract: benchContract, consumers: noopConsumers(() => void runs++), store })
  const worker = await server.startWorker()
  await base.db.transaction(async (tx) => {
    await tx.execute(sql.raw(`insert into a2_sessions (id, owner) select 'd-' || g, '${OWNER}' from generate_series(0, 99) g`))
    await tx.execute(
      sql.raw(`insert into a2_events (session_id, index, id, type, payload)
               select 'd-' || (g % 100), g / 100, 'e' || g, 'job', json_build_object('n', g)::jsonb from generate_series(0, ${JOBS - 1}) g`),
    )
    counting = true
    await tx.execute(
      sql.raw(`insert into a2_jobs (session_id, event_index, event_id, consumer, max_attempts)
               select 'd-' || (g % 100), g / 100, 'e' || g, 'noop', 3 from generate_series(0, ${JOBS - 1}) g`),
    )
  })
  const t0 = performance.now()
  await until(() => runs >= JOBS && worker.activeCount === 0, 120_000, `${JOBS} no-op jobs`, 1)
  const seconds = (performance.now() - t0) / 1000
  counting = false
  await server.stopWorkers({ graceMs: 1000 })
  console.log(`${JOBS} jobs in ${seconds.toFixed(2)} s (${Math.round(JOBS / seconds)} jobs/s); statements per job by kind:`)
  for (const [kind, c] of [...counts].sort((a, b) => b[1].n - a[1].n))
    console.log(`  ${(c.n / JOBS).toFixed(3).padStart(7)}  ${(c.ms / c.n).toFixed(2).padStart(6)} ms each  ${kind}`)
} finally {
  await base.close()
  await db.drop()
}
process.exit(0)
