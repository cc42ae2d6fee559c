/**
 * Claim throughput and cross-process append → run-start latency on Postgres; prints JSON.
 *
 *   npx tsx bench/claim.ts [--jobs 2000] [--samples 200]
 *
 * Database: a fresh one on BENCH_DATABASE_URL || TEST_DATABASE_URL || DATABASE_URL || the
 * local default, dropped at the end. Each figure has a baseline measured in the same run:
 *  - throughput: one worker (default concurrency) runs N no-op jobs, from start to the last
 *    COMPLETED row; baseline: a bare `FOR UPDATE SKIP LOCKED` claim-and-complete statement
 *    over the same number of rows, batches of 16 (the database's floor for this work);
 *  - latency: this process appends `generate`, a worker in a child process reports its run
 *    start (clocks: performance.timeOrigin + now(), one machine); baseline: NOTIFY from one
 *    connection to a LISTEN on another, in this process (the transport alone).
 */
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { consumer, createServer, migrate, openPostgresStore, type Store } from '@/lib/a2/server'
import { query } from '@/lib/a2/internal/store'
import { testContract } from '@/lib/a2/test-kit/contract'
import { epochNow, mpConsumers, spawnWorker, type WorkerChild } from '@/lib/a2/test-kit/worker-process'

const ADMIN_URL =
  process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? Number(process.argv[i + 1]) : fallback
}
const JOBS = arg('jobs', 2000)
const SAMPLES = arg('samples', 200)

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms))

function stats(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]
  const round = (x: number) => Math.round(x * 100) / 100
  return {
    n: sorted.length,
    p50: round(at(0.5)),
    p90: round(at(0.9)),
    p99: round(at(0.99)),
    max: round(sorted[sorted.length - 1]),
    mean: round(sorted.reduce((a, b) => a + b, 0) / sorted.length),
  }
}

async function withDatabase<T>(fn: (url: string) => Promise<T>): Promise<T> {
  const name = `a2_claimbench_${process.pid}_${randomBytes(3).toString('hex')}`
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  const url = new URL(ADMIN_URL)
  url.pathname = `/${name}`
  try {
    return await fn(url.toString())
  } finally {
    await admin.unsafe(`drop database if exists ${name} with (force)`)
    await admin.end({ timeout: 2 })
  }
}

async function countCompleted(store: Store, consumerName: string): Promise<number> {
  const [{ n }] = await query<{ n: number }>(
    store.db,
    sql`select count(*)::int as n from a2_jobs where consumer = ${consumerName} and status = 'COMPLETED'`,
  )
  return n
}

/** Appends `jobs` events of `type` across sessions of 20 events, one append per session. */
async function seed(server: ReturnType<typeof createServer<typeof testContract>>, jobs: number, type: 'message'): Promise<void> {
  for (let done = 0; done < jobs; done += 20) {
    const { id } = await server.sessions.create('bench')
    const n = Math.min(20, jobs - done)
    await server.append(id, ...Array.from({ length: n }, (_, i) => ({ type, payload: { text: `m${done + i}` } })))
  }
}

async function throughput(store: Store) {
  let runs = 0
  const noop = consumer({ contract: testContract, name: 'bench-noop', types: ['message'] }).run(async () => {
    runs++
  })
  const server = createServer({ contract: testContract, consumers: [noop], store })
  await seed(server, JOBS, 'message')

  const startedAt = performance.now()
  await server.startWorker()
  while ((await countCompleted(store, 'bench-noop')) < JOBS) await delay(10)
  const seconds = (performance.now() - startedAt) / 1000
  await server.stopWorkers({ graceMs: 1_000 })

  // Baseline: the same number of rows claimed and completed by a bare statement, 16 at a time.
  const baselineRows = createServer({
    contract: testContract,
    consumers: [consumer({ contract: testContract, name: 'bench-bare', types: ['message'] }).run(async () => {})],
    store,
  })
  await seed(baselineRows, JOBS, 'message')
  const bareStartedAt = performance.now()
  let claimed = 0
  while (claimed < JOBS) {
    const rows = await query(
      store.db,
      sql`update a2_jobs set status = 'COMPLETED', attempt = attempt + 1, updated_at = now()
          where id in (select id from a2_jobs where consumer = 'bench-bare' and status = 'ACTIVE'
                       order by run_at, id limit 16 for update skip locked)
          returning id`,
    )
    claimed += rows.length
  }
  const bareSeconds = (performance.now() - bareStartedAt) / 1000
  return {
    jobs: JOBS,
    runs,
    seconds: Math.round(seconds * 1000) / 1000,
    jobsPerSecond: Math.round(JOBS / seconds),
    baseline: { what: 'bare SKIP LOCKED claim+complete, batches of 16, one connection', jobsPerSecond: Math.round(JOBS / bareSeconds) },
  }
}

async function latency(url: string, store: Store) {
  const server = createServer({ contract: testContract, consumers: mpConsumers({ leaseMs: 15_000 }), store })
  let child: WorkerChild | undefined
  try {
    child = spawnWorker({ url, mode: 'quick', leaseMs: 15_000, pollMs: 500 })
    await child.waitFor('ready', undefined, 30_000)
    const { id: session } = await server.sessions.create('bench')
    const startLatency: number[] = []
    const observed: number[] = []
    const appendMs: number[] = []
    for (let i = 0; i < SAMPLES + 10; i++) {
      const t0 = epochNow()
      const [g] = await server.append(session, { type: 'generate', payload: {} })
      const appended = epochNow()
      const started = await child.waitFor('started', (r) => r.eventId === g.id, 10_000)
      const seen = epochNow()
      await child.waitFor('returned', (r) => r.jobId === started.jobId, 10_000)
      if (i >= 10) {
        // the first ten warm up connections and JIT
        startLatency.push(started.at - t0)
        observed.push(seen - t0)
        appendMs.push(appended - t0)
      }
      await delay(3 + Math.random() * 7) // do not phase-lock with the worker's timers
    }

    // Baseline: NOTIFY → LISTEN between two connections of this process.
    const listener = postgres(url, { max: 1, onnotice: () => {} })
    const notifier = postgres(url, { max: 1, onnotice: () => {} })
    const notify: number[] = []
    let resolveNext: (() => void) | undefined
    const sub = await listener.listen('bench_baseline', () => resolveNext?.())
    for (let i = 0; i < SAMPLES + 10; i++) {
      const got = new Promise<void>((r) => (resolveNext = r))
      const t0 = performance.now()
      await notifier`select pg_notify('bench_baseline', 'x')`
      await got
      if (i >= 10) notify.push(performance.now() - t0)
    }
    await sub.unlisten()
    await Promise.all([listener.end({ timeout: 2 }), notifier.end({ timeout: 2 })])

    return {
      samples: startLatency.length,
      appendToRunStartMs: stats(startLatency),
      appendToParentSeesStartMs: stats(observed),
      /** Part of the above: the append's own transaction, until its commit returned here. */
      appendCommitMs: stats(appendMs),
      baseline: { what: 'NOTIFY → LISTEN, two connections, one process', ms: stats(notify) },
    }
  } finally {
    await child?.kill('SIGTERM')
  }
}

const result = await withDatabase(async (url) => {
  const store = await openPostgresStore(url)
  await migrate(store) // a2's tables only: this bench runs no app code
  try {
    const claim = await throughput(store)
    const crossProcess = await latency(url, store)
    return { node: process.version, database: 'postgres', claimThroughput: claim, crossProcessLatency: crossProcess }
  } finally {
    await store.close()
  }
})
console.log(JSON.stringify(result, null, 2))
process.exit(0)
