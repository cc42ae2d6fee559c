/**
 * Diagnostic (`npx tsx bench/diagnostics/claim-plan.ts`): the claim statement's plan with
 * 10k stuck lanes. A laned job waiting behind its lane's open job is still in the runnable
 * index, so every claim walks all of them in run_at order and runs the lane's NOT EXISTS
 * probe for each, even when plenty of other jobs are runnable. Prints EXPLAIN ANALYZE of
 * the library's claim query (copied from lib/a2/internal/jobs.ts) and of the drain's
 * exhausted-jobs query.
 */
import { sql } from 'drizzle-orm'
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
  await exec(`insert into a2_jobs (session_id, event_index, event_id, consumer, lane, max_attempts) select 'fresh-' || g, 0, 'e0', 'plain', null, 3 from generate_series(1, 100) g`)
  await exec('analyze a2_jobs')
  const claim = `explain (analyze, buffers, costs off)
    select j.id from a2_jobs j
    where j.status = 'ACTIVE' and j.run_at <= now() and j.consumer in ('plain', 'laned')
      and (j.lease_until is null or j.lease_until < now())
      and j.attempt < j.max_attempts
      and (j.lane is null or not exists (
        select 1 from a2_jobs e
        where e.session_id = j.session_id and e.consumer = j.consumer and e.lane = j.lane
          and e.event_index < j.event_index and e.status in ('ACTIVE', 'CANCELLING')))
    order by j.run_at, j.id
    limit 16
    for update skip locked`
  console.log('-- claim, 10k stuck lanes, 100 runnable jobs of another consumer')
  for (const r of await rows(store, sql.raw(claim))) console.log(Object.values(r)[0])
  console.log('-- the drain: jobs whose last attempt lost its lease')
  const drain = `explain (analyze, costs off) select id from a2_jobs where status = 'ACTIVE' and owner is not null and lease_until < now() and attempt >= max_attempts limit 100`
  for (const r of await rows(store, sql.raw(drain))) console.log(Object.values(r)[0])
} finally {
  await store.close()
  await db.drop()
}
