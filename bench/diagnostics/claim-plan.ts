/**
 * Diagnostic (`npx tsx bench/diagnostics/claim-plan.ts`): the claim statement's plan with
 * 10k stuck lanes (each lane's head leased to a dead owner for an hour, a job waiting behind
 * it) and 100 runnable jobs of another consumer. Before lane heads, the waiting jobs were
 * in the runnable index and every claim walked all of them in run_at order, probing each
 * one's lane with a NOT EXISTS. Prints EXPLAIN ANALYZE of the library's own claim statement
 * (claimStatement, lib/a2/internal/jobs.ts: the same text the worker runs; it claims 16 jobs
 * in this throwaway database) and of the drain's exhausted-jobs query.
 */
import { sql } from 'drizzle-orm'
import { claimStatement } from '@/lib/a2/internal/jobs'
import { createBenchDb, openBenchStore, rows } from '../lib/db'

const db = await createBenchDb()
const store = await openBenchStore('postgres', db.url)
const exec = (statement: string) => store.db.execute(sql.raw(statement))
try {
  await exec(`insert into a2_sessions (id, owner) select 'stuck-' || g, 'bench' from generate_series(1, 10000) g`)
  await exec(`insert into a2_jobs (session_id, event_index, event_id, consumer, lane, max_attempts, attempt, owner, lease_until, run_at)
    select 'stuck-' || g, 0, 'e0', 'laned', 'L', 3, 1, 'dead-owner', now() + interval '1 hour', now() - interval '1 minute' from generate_series(1, 10000) g
    union all
    select 'stuck-' || g, 1, 'e1', 'laned', 'L', 3, 0, null, null, now() - interval '1 minute' from generate_series(1, 10000) g`)
  await exec(`insert into a2_sessions (id, owner) select 'fresh-' || g, 'bench' from generate_series(1, 100) g`)
  await exec(
    `insert into a2_jobs (session_id, event_index, event_id, consumer, lane, max_attempts) select 'fresh-' || g, 0, 'e0', 'plain', null, 3 from generate_series(1, 100) g`,
  )
  // Their trigger events: the claim returns each claimed job's (an index lookup per job).
  await exec(`insert into a2_events (session_id, index, id, type, payload)
    select 'stuck-' || g, i, 'stuck-' || g || '-e' || i, 'job', '{}'::jsonb from generate_series(1, 10000) g, generate_series(0, 1) i
    union all
    select 'fresh-' || g, 0, 'fresh-' || g || '-e0', 'job', '{}'::jsonb from generate_series(1, 100) g`)
  await exec('analyze a2_jobs')
  await exec('analyze a2_events')
  const claim = claimStatement({ consumers: ['plain', 'laned'], owner: 'diagnostic', leaseMs: { plain: 30_000, laned: 30_000 }, limit: 16 })
  console.log('-- claim, 10k stuck lanes, 100 runnable jobs of another consumer')
  for (const r of await rows(store, sql`explain (analyze, buffers, costs off) ${claim}`)) console.log(Object.values(r)[0])
  console.log('-- the drain: jobs whose last attempt lost its lease')
  const drain = `explain (analyze, costs off) select id from a2_jobs where status = 'ACTIVE' and owner is not null and lease_until < now() and attempt >= max_attempts limit 100`
  for (const r of await rows(store, sql.raw(drain))) console.log(Object.values(r)[0])
} finally {
  await store.close()
  await db.drop()
}
