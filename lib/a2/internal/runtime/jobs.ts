/**
 * Job state changes, one statement each. Every write made under a lease is fenced on
 * (job, attempt) and checks its row count: a superseded attempt writes nothing.
 */
import { wakeWorkers } from '../log/bus'
import { sql, type SQL } from 'drizzle-orm'
import type { EventRef } from '../core/abort'
import { FAILED_TYPE, type A2Event } from '../core/contract'
import { eventFromRow } from '../log/event-row'
import type { Fence } from '../core/types'
import { query, type Executor } from '../store/store'
import { LEASED, type RunStatus } from '../core/transitions'

export interface ClaimedJob {
  id: number
  sessionId: string
  eventIndex: number
  eventId: string
  consumer: string
  attempt: number
  maxAttempts: number
  cancelVersion: number
  /**
   * What the start boundary reads, as the claim found it: the trigger event (undefined only if
   * its row is gone) and a Stop recorded against the run. The attempt starts from these
   * without another round trip (attempt.ts, startFromClaim).
   */
  event?: A2Event
  cancelledBy?: EventRef
}

export interface ClaimArgs {
  consumers: string[]
  owner: string
  ownerKey?: number
  leaseMs: Record<string, number>
  limit: number
  /** False: only runs no attempt has started yet (see WorkerOptions.resumeAfterMs). */
  resume?: boolean
}

/**
 * When a job is next free to claim: its run_at, or the end of the lease that holds it. The
 * claim's index (a2_jobs_claimable) is on this very expression, so the claim's range scan
 * up to now() never walks a running job.
 */
const FREE_AT = sql`greatest(j.run_at, coalesce(j.lease_until, '-infinity'::timestamptz))`

/**
 * The claim, as one statement (exported for claim-plan.test.ts, which checks this very text's
 * plan). `for update skip locked` so workers never wait on each other; attempt
 * bumped (the new fencing token), owner and lease set. Lanes cost the claim nothing: a laned
 * job waiting behind an earlier open job of its (session, consumer, lane) — ACTIVE,
 * CANCELLING or UNKNOWN — is `lane_blocked` and outside the index (sql/0004_lane_heads.ts keeps
 * the flag), so a lane runs in log order, an UNKNOWN run keeps the next one waiting for the
 * operator, and other sessions' jobs are not held up by it.
 */
export function claimStatement(args: ClaimArgs): SQL {
  const leases = JSON.stringify(args.leaseMs)
  return sql`with candidates as (
          select j.id, j.owner as previous_owner from a2_jobs j
          where j.status = 'ACTIVE' and not j.lane_blocked and ${FREE_AT} <= now()
            and j.consumer in ${args.consumers}
            and (j.lease_until is null or j.lease_until < now())
            and j.attempt < j.max_attempts and (j.attempt = 0 or ${args.resume ?? true}::boolean)
          order by ${FREE_AT}, j.id
          limit ${args.limit}
          for update skip locked
        ),
        claimed as (
          update a2_jobs j
          set attempt = j.attempt + 1, owner = ${args.owner}, owner_key = ${args.ownerKey ?? null}::int,
              lease_until = now() + ((${leases}::jsonb ->> j.consumer)::int * interval '1 millisecond'),
              updated_at = now()
          from candidates c where j.id = c.id
          returning j.id, j.session_id, j.event_index, j.event_id, j.consumer, j.attempt, j.max_attempts, j.cancel_version,
                    j.cancelled_by, c.previous_owner
        ),
        -- A claim that takes over from an owner whose lease ran out says so in the history:
        -- that is how the previous attempt ended.
        lapsed as (
          insert into a2_job_transitions (job_id, attempt, from_status, to_status, reason, detail)
          select id, attempt - 1, 'ACTIVE', 'ACTIVE', 'LEASE_EXPIRED', jsonb_build_object('owner', previous_owner)
          from claimed where previous_owner is not null
        )
        -- The trigger event comes back with the claim: the attempt needs it to start, and reading
        -- it here instead of in a statement of its own halves the statements per job (two, the
        -- claim's share aside, where a bare SKIP LOCKED loop takes one; bench figure 4).
        select c.id, c.session_id, c.event_index, c.event_id, c.consumer, c.attempt, c.max_attempts, c.cancel_version, c.cancelled_by,
               e.index as e_index, e.type as e_type, e.payload as e_payload, e.created_at as e_created_at
        from claimed c left join a2_events e on e.session_id = c.session_id and e.index = c.event_index`
}

/** Claims up to `limit` runnable jobs in one statement (claimStatement). */
export async function claimJobs(executor: Executor, args: ClaimArgs): Promise<ClaimedJob[]> {
  if (args.limit <= 0 || args.consumers.length === 0) return []
  const rows = await query<ClaimRow>(executor, claimStatement(args))
  return rows.map((r) => ({
    id: Number(r.id),
    sessionId: String(r.session_id),
    eventIndex: Number(r.event_index),
    eventId: String(r.event_id),
    consumer: String(r.consumer),
    attempt: Number(r.attempt),
    maxAttempts: Number(r.max_attempts),
    cancelVersion: Number(r.cancel_version),
    event:
      r.e_index === null
        ? undefined
        : eventFromRow({
            id: r.event_id,
            session_id: r.session_id,
            index: r.e_index,
            type: r.e_type!,
            payload: r.e_payload,
            created_at: r.e_created_at!,
          }),
    cancelledBy: r.cancelled_by ? { id: r.cancelled_by.id, index: r.cancelled_by.index } : undefined,
  }))
}

interface ClaimRow {
  id: number
  session_id: string
  event_index: number
  event_id: string
  consumer: string
  attempt: number
  max_attempts: number
  cancel_version: number
  cancelled_by: EventRef | null
  e_index: number | null
  e_type: string | null
  e_payload: unknown
  e_created_at: Date | string | null
}

export interface RenewResult {
  held: boolean
  status?: RunStatus
  cancelVersion?: number
  cancelledBy?: { id: string; index: number } | null
}

/** Extends the lease. Not held: another attempt has the job, or it was fenced out. */
export async function renewLease(executor: Executor, fence: Fence, owner: string, leaseMs: number): Promise<RenewResult> {
  const [row] = await query<{ status: RunStatus; cancel_version: number; cancelled_by: RenewResult['cancelledBy'] }>(
    executor,
    sql`update a2_jobs set lease_until = now() + ${leaseMs} * interval '1 millisecond', updated_at = now()
        where id = ${fence.jobId} and attempt = ${fence.attempt} and owner = ${owner}
          and status in ${LEASED}
        returning status, cancel_version, cancelled_by`,
  )
  if (!row) return { held: false }
  return { held: true, status: row.status, cancelVersion: row.cancel_version, cancelledBy: row.cancelled_by }
}

/** Why a fenced write found no row: superseded by a newer attempt, or the run was settled without it. */
export async function whyNotHeld(executor: Executor, fence: Fence): Promise<'SUPERSEDED_ATTEMPT' | 'FENCED_OUT'> {
  const [row] = await query<{ attempt: number }>(executor, sql`select attempt from a2_jobs where id = ${fence.jobId}`)
  return row && row.attempt !== fence.attempt ? 'SUPERSEDED_ATTEMPT' : 'FENCED_OUT'
}

/**
 * A transition row's `detail` as SQL: NULL when absent, else a jsonb value. Every state
 * change below inserts its transition in the same statement (a data-modifying CTE), so the
 * history can never miss a change that committed, nor show one that did not.
 */
function detailSql(detail: unknown): SQL {
  return detail === undefined ? sql`null::jsonb` : sql`${JSON.stringify(detail)}::jsonb`
}

/**
 * The attempt lost its claim and threw: give the job back at once. The attempt stays
 * spent (attempt is not decremented), so a crash loop still exhausts the budget.
 */
export async function surrenderJob(executor: Executor, fence: Fence, code: string, options: { refund?: boolean } = {}): Promise<boolean> {
  // A refund raises the budget instead of lowering the attempt: the attempt number is the
  // fencing token and must never be handed out twice.
  const budget = options.refund ? sql`max_attempts + 1` : sql`max_attempts`
  const rows = await query(
    executor,
    sql`with moved as (
          update a2_jobs set owner = null, lease_until = null, run_at = now(), updated_at = now(), max_attempts = ${budget}
          where id = ${fence.jobId} and attempt = ${fence.attempt} and status in ${LEASED}
          returning id, status
        )
        insert into a2_job_transitions (job_id, attempt, from_status, to_status, reason, detail)
        select id, ${fence.attempt}::int, status, status, 'SURRENDERED', ${detailSql({ code })} from moved
        returning id`,
  )
  // Wake every worker: the job is claimable now (a shutdown hands it over at once).
  if (rows.length === 1) await wakeWorkers(executor)
  return rows.length === 1
}

/**
 * Retry scheduling boundary: a failure is retried only while the run is still ACTIVE
 * (compare-and-set). 'REVOKED': a cancel landed first; the caller ends the run (settle.ts),
 * and that is recorded there.
 */
export async function scheduleRetry(
  executor: Executor,
  fence: Fence,
  delayMs: number,
  error: { message: string; code?: string },
): Promise<'RETRY_SCHEDULED' | 'REVOKED'> {
  const retried = await query(
    executor,
    sql`with moved as (
          update a2_jobs set owner = null, lease_until = null, run_at = now() + ${delayMs} * interval '1 millisecond',
                 last_error = ${JSON.stringify(error)}::jsonb, updated_at = now()
          where id = ${fence.jobId} and attempt = ${fence.attempt} and status = 'ACTIVE'
          returning id
        )
        insert into a2_job_transitions (job_id, attempt, from_status, to_status, reason, detail)
        select id, ${fence.attempt}::int, 'ACTIVE', 'ACTIVE', 'RETRY_SCHEDULED', ${detailSql({ delayMs, error })} from moved
        returning id`,
  )
  return retried.length === 1 ? 'RETRY_SCHEDULED' : 'REVOKED'
}

/** The failure payload the runtime appends so the app can show that a run gave up. */
export function failureEvent(job: { eventId: string; consumer: string }, attempts: number, error: { message: string; code?: string }) {
  return { type: FAILED_TYPE, payload: { of: job.eventId, consumer: job.consumer, attempts, error } }
}

export function describeError(error: unknown): { message: string; code?: string } {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code
    return { message: error.message.slice(0, 500), ...(typeof code === 'string' ? { code } : {}) }
  }
  return { message: String(error).slice(0, 500) }
}

/** Exponential backoff with full jitter: 250 ms, 500 ms, 1 s … capped at 30 s. */
export function backoffMs(attempt: number): number {
  const ceiling = Math.min(30_000, 250 * 2 ** Math.max(0, attempt - 1))
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2)
}
