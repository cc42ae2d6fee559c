/**
 * How a run ends: the one statement that moves runs to their terminal state (`endRuns`), the
 * group commit that sends the endings a process's attempts ask for together (`endRun`), and
 * the statement by which an UNKNOWN run leaves UNKNOWN once its effects are resolved
 * (`resolveUnknownRun`). Settling (settle.ts) reconciles a run's effects and then ends it here;
 * nothing else moves a run out of ACTIVE, CANCELLING or UNKNOWN for good.
 */
import { sql } from 'drizzle-orm'
import { wakeWorkers } from '../log/bus'
import { GroupCommit } from '../store/group-commit'
import { query, type Executor, type Store } from '../store/store'
import type { Fence } from '../core/types'
import type { RunStatus, TransitionReason } from '../core/transitions'

/** Where a run goes from each status it may be in when it ends, and why. */
export type EndRule = Partial<Record<RunStatus, { to: 'COMPLETED' | 'CANCELLED' | 'FAILED'; reason: TransitionReason }>>

/** The handler returned: COMPLETED, or CANCELLED when a Stop landed during the run (the Stop is the outcome). */
export const RETURNED: EndRule = { ACTIVE: { to: 'COMPLETED', reason: 'RETURNED' }, CANCELLING: { to: 'CANCELLED', reason: 'STOPPED_BY_CANCEL' } }

/** A Stop was recorded against the run: it ends CANCELLED, for `reason`. */
export function stopped(reason: TransitionReason = 'STOPPED_BY_CANCEL'): EndRule {
  return { CANCELLING: { to: 'CANCELLED', reason } }
}

/** One run's end, as `endRuns` takes it: its fence, and where it goes from each status it may end from. */
export interface EndRequest {
  fence: Fence
  rule: EndRule
  detail?: unknown
}

/**
 * The one statement by which runs end: each request fenced on its (job, attempt), from a
 * status its `rule` names, and decided from the stored state of its run's effects — while
 * any effect is DISPATCHED or UNKNOWN the run becomes UNKNOWN (EFFECT_UNKNOWN) instead, for a
 * reconcile or an operator to resolve. Each job row is locked while its effects are counted,
 * and a dispatch share-locks it (effects.ts), so no effect can be dispatched between the count
 * and the change. The effects still open are counted with their rows share-locked, so as
 * last committed, not as this statement's snapshot had them: an effect's late outcome that
 * committed while this statement waited on a run's row (its own settle found the run not yet
 * UNKNOWN and left it) would otherwise leave the run UNKNOWN with nothing left to resolve
 * (unknown-settle.test.ts, on Postgres); only effects still open are locked, so an
 * ordinary ending locks nothing more (figure 4, 7 alternated pairs at load 1.2-2.5: 1.36× the
 * bare loop's throughput before, 1.45× after, medians within the noise). Rows are locked in
 * id order (the lock order of sql/0004_lane_heads.ts), job rows before effect rows, so two
 * batches, or a batch and a push, wait on each other instead of deadlocking on each other's
 * rows. One result per request, in order: the status it moved its run to, or
 * undefined when its attempt no longer holds the run (its row count is 0). At most one
 * request per job (`endRun` sends a second one in the next statement).
 * The requests go as one jsonb, so the text, and its prepared plan, is the same for any count.
 */
export async function endRuns(executor: Executor, requests: readonly EndRequest[]): Promise<Array<RunStatus | undefined>> {
  if (requests.length === 0) return []
  const rows = requests.map(({ fence, rule, detail }, i) => ({ i, id: fence.jobId, attempt: fence.attempt, rule, detail: detail ?? null }))
  const moved = await query<{ i: number; to_status: RunStatus }>(
    executor,
    sql`with req as (
          select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(i int, id bigint, attempt int, rule jsonb, detail jsonb)
        ), prev as (
          select j.id, j.status, req.i, req.attempt, req.rule, req.detail
          from a2_jobs j join req on j.id = req.id and j.attempt = req.attempt
          where req.rule ? j.status
          order by j.id
          for update of j
        ), open_effects as (
          select e.job_id from a2_effects e join prev on e.job_id = prev.id
          where e.status in ('DISPATCHED', 'UNKNOWN')
          for share of e
        ), unsettled as (
          select prev.id, (select count(*) from open_effects o where o.job_id = prev.id)::int as n
          from prev
        ), moved as (
          update a2_jobs j
          set status = case when u.n > 0 then 'UNKNOWN' else prev.rule -> prev.status ->> 'to' end,
              owner = null, lease_until = null, updated_at = now()
          from prev join unsettled u on u.id = prev.id
          where j.id = prev.id
          returning j.id, j.status, prev.status as from_status, prev.i, prev.attempt, prev.rule, prev.detail
        ), logged as (
          insert into a2_job_transitions (job_id, attempt, from_status, to_status, reason, detail)
          select id, attempt, from_status, status,
                 case when status = 'UNKNOWN' then 'EFFECT_UNKNOWN' else rule -> from_status ->> 'reason' end,
                 detail
          from moved
        )
        select i, status as to_status from moved`,
  )
  const out: Array<RunStatus | undefined> = requests.map(() => undefined)
  for (const row of moved) out[Number(row.i)] = row.to_status
  return out
}

/**
 * At most this many runs per statement: a worker's default concurrency, so one statement ends
 * every run of a worker.
 */
export const MAX_END_BATCH = 64

const committers = new WeakMap<Store, GroupCommit<EndRequest, RunStatus | undefined>>()

/**
 * Ends one run (`endRuns`), in a statement shared with the other runs ending on `store` now.
 * Why: a no-op job ended in a statement (and a commit) of its own, so a worker sent one
 * statement per job on top of its share of a claim. Ended together, ~17 runs share one
 * statement: 1.07 → 0.12 statements per job, CPU per job 1.6× → 1.2× the bare SKIP LOCKED
 * loop's on a loaded box, and figure 4's no-lane jobs/s 0.68× → 1.20× the bare loop (medians
 * of ten alternated runs each, load 6–10 on 2 cores); on PGlite 0.26–0.34× → 1.43–1.51×.
 * The cost: a batch waiting on one of its rows' locks (a push or an effect dispatch holding
 * the run for its short transaction) holds the endings queued behind it that long too.
 */
export function endRun(store: Store, request: EndRequest): Promise<RunStatus | undefined> {
  let committer = committers.get(store)
  if (!committer) {
    committer = new GroupCommit<EndRequest, RunStatus | undefined>({
      // One statement at a time, gathering a turn: the attempts a claim started end in the same turn.
      maxInFlight: 1,
      gatherTurn: true,
      take: onePerJob,
      send: async (batch) => (await endRuns(store.db, batch)).map((value) => ({ value })),
    })
    committers.set(store, committer)
  }
  return committer.submit(request)
}

/** The waiting endings up to MAX_END_BATCH, one per job (`endRuns` takes no two for one row); the rest, in order, go next. */
function onePerJob(waiting: readonly EndRequest[]): { batch: EndRequest[]; rest: EndRequest[] } {
  const batch: EndRequest[] = []
  const rest: EndRequest[] = []
  const jobs = new Set<number>()
  for (const request of waiting) {
    if (batch.length < MAX_END_BATCH && !jobs.has(request.fence.jobId)) {
      jobs.add(request.fence.jobId)
      batch.push(request)
    } else rest.push(request)
  }
  return { batch, rest }
}

/**
 * An UNKNOWN run whose effects are all resolved leaves UNKNOWN, in one statement under its row
 * lock: CANCELLED if a Stop was recorded against it (a cancel is honoured whenever it
 * landed), else ACTIVE again (with one more attempt of budget) so a new attempt replays
 * what was recorded, or dispatches again under the same idempotency key.
 *
 * The unresolved effects are counted with their rows share-locked, after the run's row:
 * a locked row is read as last committed, not as the statement's snapshot had it. Two
 * resolutions of one run's effects at once (an operator's verdict, a late outcome) each
 * try this after their own change; the one that waited on the run's row must see the other's
 * change, which committed while it waited, or the run stays UNKNOWN with nothing left to
 * resolve (unknown-settle.test.ts, on Postgres, where the two commit concurrently). The operator locks the run's row
 * before its effect's (operator.ts), so the two locks are always taken in that order.
 */
export async function resolveUnknownRun(db: Executor, jobId: number, reason: TransitionReason, detail: unknown): Promise<RunStatus | undefined> {
  const [moved] = await query<{ to_status: RunStatus }>(
    db,
    sql`with run as (
          select id, attempt, cancelled_by from a2_jobs where id = ${jobId} and status = 'UNKNOWN' for update
        ), unsettled as (
          select e.key from a2_effects e join run on e.job_id = run.id
          where e.status in ('UNKNOWN', 'DISPATCHED')
          for share of e
        ), moved as (
          update a2_jobs j
          set status = case when run.cancelled_by is not null then 'CANCELLED' else 'ACTIVE' end,
              owner = null, lease_until = null, run_at = now(),
              max_attempts = greatest(j.max_attempts, j.attempt + 1), updated_at = now()
          from run where j.id = run.id and not exists (select 1 from unsettled)
          returning j.id, j.attempt, j.status
        )
        insert into a2_job_transitions (job_id, attempt, from_status, to_status, reason, detail)
        select id, attempt, 'UNKNOWN', status, ${reason}, ${JSON.stringify(detail ?? null)}::jsonb from moved
        returning to_status`,
  )
  if (moved?.to_status === 'ACTIVE') await wakeWorkers(db)
  if (moved) return moved.to_status
  const [job] = await query<{ status: RunStatus }>(db, sql`select status from a2_jobs where id = ${jobId}`)
  return job?.status
}
