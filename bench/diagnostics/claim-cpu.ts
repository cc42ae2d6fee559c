/**
 * Diagnostic (`npx tsx bench/diagnostics/claim-cpu.ts [jobs] [rounds]`): CPU per job of figure
 * 4's no-lane claim loop and of its bare baseline: this process (the worker and the bare
 * loop both run here) and the Postgres backends of the bench database's connections. On a
 * shared 2-core machine jobs/s follows whatever else runs; CPU per job much less so. Trials
 * alternate ours / bare after one unmeasured trial of each.
 */
import { readFileSync } from 'node:fs'
import { sql } from 'drizzle-orm'
import { createBenchDb, openBenchStore, rows } from '../lib/db'
import { bareTrial, ddl, ourWorker } from '../figures/claim'
import type { Store } from '@/lib/a2/server'

const JOBS = Number(process.argv[2] ?? 3000)
const ROUNDS = Number(process.argv[3] ?? 3)

function ticksOfPid(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return 0
  }
}

async function backendTicks(store: Store): Promise<number> {
  const pids = await rows(store, sql`select pid from pg_stat_activity where datname = current_database()`)
  return pids.reduce((sum, r) => sum + ticksOfPid(Number(r.pid)), 0)
}

/** ms of CPU per job: this process, and the database's backends (10 ms ticks). */
async function measure<T>(store: Store, jobs: number, fn: () => Promise<T>): Promise<{ node: number; pg: number; jobsPerS: T }> {
  const n0 = process.cpuUsage()
  const p0 = await backendTicks(store)
  const out = await fn()
  const n = process.cpuUsage(n0)
  const p = (await backendTicks(store)) - p0
  return { node: (n.user + n.system) / 1000 / jobs, pg: (p * 10) / jobs, jobsPerS: out }
}

const db = await createBenchDb()
const store = await openBenchStore('postgres', db.url)
try {
  await ddl(store)
  const worker = await ourWorker(store)
  await worker.trial(JOBS, false)
  await bareTrial(store, JOBS, 'warm-up')
  const fmt = (m: { node: number; pg: number; jobsPerS: number }) =>
    `node ${m.node.toFixed(3)} ms/job, pg ${m.pg.toFixed(3)} ms/job, ${Math.round(m.jobsPerS)} jobs/s`
  for (let r = 0; r < ROUNDS; r++) {
    const ours = await measure(store, JOBS, () => worker.trial(JOBS, false))
    const bare = await measure(store, JOBS, () => bareTrial(store, JOBS, String(r)))
    console.log(`round ${r}: ours ${fmt(ours)} | bare ${fmt(bare)}`)
  }
  await worker.stop()
} finally {
  await store.close()
  await db.drop()
}
process.exit(0)
