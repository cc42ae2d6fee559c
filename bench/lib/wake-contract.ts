/**
 * A contract with one no-op consumer, for the claim and wake-up figures: the runtime's
 * own cost (claim, read the trigger, run, settle), with nothing else in the way.
 */
import { z } from 'zod'
import { defineContract } from '@/lib/a2'
import { consumer } from '@/lib/a2/server'

export const benchContract = defineContract({
  events: {
    job: { schema: z.object({ n: z.number().int() }) },
    'laned-job': { schema: z.object({ n: z.number().int() }) },
  },
})

export function noopConsumers(onStart: (n: number) => void) {
  return [
    consumer({ contract: benchContract, name: 'noop', types: ['job'] }).run(async (ctx) => {
      onStart(ctx.event.payload.n)
    }),
    consumer({ contract: benchContract, name: 'noop-laned', types: ['laned-job'], lane: 'L' }).run(async (ctx) => {
      onStart(ctx.event.payload.n)
    }),
  ]
}

/** The bare job table of the claim baseline: what a minimal SKIP LOCKED queue needs, nothing more. */
export const BARE_JOBS_DDL = `
  create table if not exists bench_jobs (
    id bigserial primary key,
    n integer not null,
    status text not null default 'ready',
    run_at timestamptz not null default now(),
    attempts integer not null default 0,
    locked_by text,
    locked_until timestamptz
  );
  create index if not exists bench_jobs_ready on bench_jobs (run_at, id) where status = 'ready';
`

/** One claim of up to `limit` ready jobs, in one statement (the graphile-worker shape). */
export const bareClaim = (limit: number, owner: string) => `
  with c as (
    select id from bench_jobs where status = 'ready' and run_at <= now()
    order by run_at, id limit ${limit} for update skip locked
  )
  update bench_jobs j set status = 'running', attempts = j.attempts + 1, locked_by = '${owner}',
         locked_until = now() + interval '15 seconds'
  from c where j.id = c.id
  returning j.id, j.n`

export const bareComplete = (id: number, owner: string) =>
  `update bench_jobs set status = 'done', locked_by = null, locked_until = null where id = ${id} and locked_by = '${owner}'`
