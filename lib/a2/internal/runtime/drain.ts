/**
 * The controller's drain, run by every worker on every poll tick for its own consumers:
 *   - CANCELLING runs nobody will finish (never claimed, waiting for a retry, an owner
 *     gone, or one that ignored its signal past the grace period), and
 *   - ACTIVE runs whose last attempt died (out of attempts),
 * are taken like a claim (`for update skip locked`: two drains never settle one run) and
 * settled through settle.ts, from the stored state of their effects. A drain that takes a
 * run someone held does so as a new attempt, so the old attempt's writes are fenced out.
 * A controller that restarts resumes from the durable state: nothing here is in memory.
 */
import { wakeWorkers } from '../log/bus'
import { sql } from 'drizzle-orm'
import { leaseMsOf, type RuntimeHost } from './runtime-host'
import { describeError } from './jobs'
import type { Liveness } from './liveness'
import { settleFailed, settleRun } from './settle'
import { stopped } from './end-runs'
import { callOnEnded } from './on-ended'
import { query, type Executor } from '../store/store'
import { LEASED, type TransitionReason } from '../core/transitions'

export interface DrainOptions {
  /** Who drains: the drain holds a run under this name while it settles it. */
  owner: string
  /** This process's liveness: runs whose owner died are released before their lease ends. */
  liveness?: Liveness
  /** A cancelled run that keeps going this long after CANCELLING is fenced out. */
  graceMs: number
  /**
   * Owner keys this process found gone, with when it first did (the worker keeps it across
   * ticks): an owner is released only once seen gone for OWNER_GONE_CONFIRM_MS. Without it
   * (a test driving one drain by hand), at the first sight.
   */
  suspects?: Map<number, number>
  /** Called for a run this process is running that the drain is about to force out. */
  forceOut(jobId: number): void
}

/**
 * How long an owner's key must be seen missing before its runs are released: longer than a
 * live process needs to take its lock back after its lock connection broke (at once on the
 * close, a connect and one statement: 20–47 ms in connection-loss.test.ts at load 9–13 on 2
 * cores), and the worker looks again exactly this much later (worker.ts), so a killed worker
 * costs this much more than one look (bench figure 7: takeover p50 425 → 653 ms at load 14–18).
 */
export const OWNER_GONE_CONFIRM_MS = 300

/** At most this many runs per kind and tick: a backlog drains over several ticks, each one bounded. */
const DRAIN_BATCH = 100

export async function drainOnce(host: RuntimeHost, options: DrainOptions): Promise<void> {
  const consumers = [...host.consumers.keys()]
  if (consumers.length === 0) return
  const leaseMs: Record<string, number> = {}
  for (const [name, c] of host.consumers) leaseMs[name] = leaseMsOf(c)
  const claim = { consumers, owner: options.owner, ownerKey: options.liveness?.key, leaseMs, graceMs: options.graceMs }
  if (options.liveness?.trusted()) await releaseDeadOwners(host.store.db, consumers, options.liveness, options.suspects)

  for (const run of await takeStuckCancelling(host.store.db, claim)) {
    const fence = { jobId: run.id, attempt: run.attempt }
    if (run.live) options.forceOut(run.id)
    const reason: TransitionReason = run.forced
      ? 'FORCED_AFTER_GRACE'
      : run.previousAttempt === 0
        ? 'CANCELLED_BEFORE_START'
        : run.released
          ? 'DRAINED_AFTER_OWNER_LOST'
          : run.previousOwner === null && run.waitingRetry
            ? 'RETRY_REVOKED'
            : run.previousOwner === null
              ? 'CANCELLED_BETWEEN_ATTEMPTS'
              : 'DRAINED_AFTER_OWNER_LOST'
    // A forced-out attempt may still be inside an effect: "not done" is no proof for it. The take
    // recorded it (FORCED_AFTER_GRACE at that attempt), so a drain that resumes after this one
    // died knows it too (applyVerdict reads the record).
    await settleRun(host, run.consumer, fence, stopped(reason), { runningAttempt: run.live ? run.previousAttempt : undefined }).then(
      // No handler ends a run the drain settles: its consumer's `onEnded` hook writes the terminal event (on-ended.ts).
      () => callOnEnded(host, fence, run),
      (error) => console.error(`[a2] drain could not settle job ${run.id}`, describeError(error).message),
    )
  }

  for (const run of await takeExhausted(host.store.db, claim)) {
    await settleFailed(
      host,
      run,
      { jobId: run.id, attempt: run.attempt },
      {
        message: `the worker running attempt ${run.previousAttempt} stopped renewing its lease`,
        code: 'LEASE_EXPIRED',
      },
      run.previousAttempt,
    ).then(
      () => callOnEnded(host, { jobId: run.id, attempt: run.attempt }, run),
      (error) => console.error(`[a2] drain could not fail job ${run.id}`, describeError(error).message),
    )
  }
}

/**
 * Runs held under a live lease by a process that is gone (liveness.ts) are released at once,
 * with OWNER_DIED in their history: an ACTIVE run becomes claimable (the next claim takes it
 * as a new attempt, fenced like any other), a CANCELLING one drainable (its lease is ended).
 * Returns how many were released.
 *
 * Not a run whose attempt has an effect DISPATCHED: liveness can be wrong (a process whose
 * lock connection dropped runs on, inside that call), and whoever took the run next would put
 * the effect to the reconcile hook, whose "not done" is no proof while the call may still be
 * running — a second dispatch beside it, or a run ended CANCELLED/FAILED under it
 * (released-owner.test.ts checks both). Such a run keeps its lease, the proof the
 * library already takes over on: by its end the owner's own clock has aborted the attempt.
 * Unless the effect is overlapSafe (its call may run twice at once under its key with no harm:
 * the chat's model call, whose output only its own attempt can write): then the run is
 * released at once, and a killed worker's answer goes on within a second, not a 15 s lease.
 */
async function releaseDeadOwners(db: Executor, consumers: string[], liveness: Liveness, suspects?: Map<number, number>): Promise<number> {
  // A live process whose lock connection broke (a killed backend, a proxy's reset) takes its
  // lock again within ~50 ms of the break when the store is up (store.ts): its key is missing
  // for that long, and a drain that looked then would declare it dead. So a key must be seen
  // missing twice, OWNER_GONE_CONFIRM_MS apart, before its runs are released; the first look
  // is one statement whatever it finds, and a killed process is taken over that much later.
  const confirmed = suspects ? await confirmedGone(db, consumers, liveness, suspects) : undefined
  if (confirmed?.length === 0) return 0
  const released = await query(
    db,
    sql`with gone as (
          select id, attempt, owner from a2_jobs j
          where status in ${LEASED} and consumer in ${consumers}
            and owner_key is not null and owner_key <> ${liveness.key} and lease_until >= now()
            and ${confirmed ? sql`owner_key in (select jsonb_array_elements_text(${JSON.stringify(confirmed.map(String))}::jsonb)::int)` : sql`true`}
            and ${liveness.ownerGone(sql`j.owner_key`)}
            and not exists (select 1 from a2_effects e where e.job_id = j.id and e.attempt = j.attempt and e.status = 'DISPATCHED'
                              and not e.overlap_safe)
          limit ${DRAIN_BATCH}
          for update skip locked
        ), released as (
          update a2_jobs j
          set owner = case when j.status = 'ACTIVE' then null else j.owner end,
              lease_until = case when j.status = 'ACTIVE' then null else now() - interval '1 millisecond' end,
              owner_key = null, updated_at = now()
          from gone g where j.id = g.id and j.attempt = g.attempt
          returning j.id, j.attempt, j.status, g.owner
        )
        insert into a2_job_transitions (job_id, attempt, from_status, to_status, reason, detail)
        select id, attempt, status, status, 'OWNER_DIED', jsonb_build_object('owner', owner) from released
        returning job_id`,
  )
  if (released.length > 0) await wakeWorkers(db)
  return released.length
}

/** Owner keys seen gone now and at a look at least OWNER_GONE_CONFIRM_MS earlier. */
async function confirmedGone(db: Executor, consumers: string[], liveness: Liveness, suspects: Map<number, number>): Promise<number[]> {
  const gone = await query<{ owner_key: number }>(
    db,
    sql`select distinct owner_key from a2_jobs j
        where status in ${LEASED} and consumer in ${consumers}
          and owner_key is not null and owner_key <> ${liveness.key} and lease_until >= now()
          and ${liveness.ownerGone(sql`j.owner_key`)}`,
  )
  const now = performance.now()
  const seen = new Set(gone.map((row) => Number(row.owner_key)))
  for (const key of suspects.keys()) if (!seen.has(key)) suspects.delete(key)
  for (const key of seen) if (!suspects.has(key)) suspects.set(key, now)
  const confirmed = [...seen].filter((key) => now - suspects.get(key)! >= OWNER_GONE_CONFIRM_MS)
  return confirmed
}

interface DrainClaim {
  consumers: string[]
  owner: string
  ownerKey?: number
  leaseMs: Record<string, number>
  graceMs: number
}

interface TakenRun {
  id: number
  attempt: number
  consumer: string
  sessionId: string
  eventId: string
  previousAttempt: number
  previousOwner: string | null
  live: boolean
  /** Its attempt's owner was judged dead (releaseDeadOwners): that owner may yet be running it. */
  released: boolean
  /** A retry was scheduled at its current attempt: what a Stop landing now revokes. */
  waitingRetry: boolean
  /** An attempt of it was forced out past its grace period: by this take (`live`) or by a drain that died before its verdict. */
  forced: boolean
}

/**
 * CANCELLING runs with no owner, an owner whose lease ran out, or one past the grace
 * period. `cancelling_since` is cleared as the drain takes the run, so the grace period
 * forces out the run's own attempt, never another drain.
 */
function takeStuckCancelling(db: Executor, claim: DrainClaim): Promise<TakenRun[]> {
  return take(
    db,
    claim,
    sql`status = 'CANCELLING'
        and (owner is null or lease_until < now() or cancelling_since < now() - ${claim.graceMs} * interval '1 millisecond')`,
    sql`cancelling_since nulls last`,
  )
}

/** ACTIVE runs out of attempts whose last owner is gone: nobody may claim them again. */
function takeExhausted(db: Executor, claim: DrainClaim): Promise<TakenRun[]> {
  return take(db, claim, sql`status = 'ACTIVE' and attempt >= max_attempts and (owner is null or lease_until < now())`, sql`id`)
}

/**
 * One statement: pick the runs (`for update skip locked`), hold them under the drain's
 * name for a lease, and give each a new attempt number when someone held it before —
 * including an owner released as dead (OWNER_DIED), which leaves no owner on the row: liveness
 * can be wrong (an owner whose lock connection dropped still runs its attempt), and without a
 * new number a run on its last attempt, or one stopped before the next claim, would end under
 * the old one with that attempt's writes still admitted (fault-paths.test.ts 12). A
 * run that ended its own attempt (a retry waiting, a surrender) has nobody to fence.
 *
 * Forcing a run out is recorded by the same statement (FORCED_AFTER_GRACE, CANCELLING →
 * CANCELLING, at the forced-out attempt): that attempt may still be inside a call, and a drain
 * that died before its verdict leaves only the database to say so. Computed from the dead
 * drain's lapsed lease, "live" would be false and the next drain would call the call "not done"
 * under a CANCELLED run (effects-in-flight.test.ts): the record is what it reads instead.
 */
async function take(db: Executor, claim: DrainClaim, where: ReturnType<typeof sql>, order: ReturnType<typeof sql>): Promise<TakenRun[]> {
  const rows = await query<Record<string, unknown>>(
    db,
    sql`with candidates as (
          select id, attempt, owner, (owner is not null and lease_until >= now()) as live,
                 exists (select 1 from a2_job_transitions t
                         where t.job_id = a2_jobs.id and t.attempt = a2_jobs.attempt and t.reason = 'OWNER_DIED') as released,
                 -- A retry scheduled at the run's current attempt is what a Stop revokes; last_error
                 -- outlives it (a run an operator handed back after an old failure waits for no retry).
                 exists (select 1 from a2_job_transitions t
                         where t.job_id = a2_jobs.id and t.attempt = a2_jobs.attempt and t.reason = 'RETRY_SCHEDULED') as waiting_retry,
                 exists (select 1 from a2_job_transitions t
                         where t.job_id = a2_jobs.id and t.reason = 'FORCED_AFTER_GRACE') as forced_before
          from a2_jobs
          where consumer in ${claim.consumers} and ${where}
          order by ${order}
          limit ${DRAIN_BATCH}
          for update skip locked
        ), taken as (
          update a2_jobs j
          set attempt = j.attempt + case when c.owner is null and not c.released then 0 else 1 end,
              owner = ${claim.owner}, owner_key = ${claim.ownerKey ?? null}::int,
              lease_until = now() + ((${JSON.stringify(claim.leaseMs)}::jsonb ->> j.consumer)::int * interval '1 millisecond'),
              cancelling_since = null, updated_at = now()
          from candidates c where j.id = c.id
          returning j.id, j.attempt, j.status, j.consumer, j.session_id, j.event_id,
                    c.attempt as previous_attempt, c.owner as previous_owner, c.live, c.released, c.waiting_retry, c.forced_before
        ), forced as (
          insert into a2_job_transitions (job_id, attempt, from_status, to_status, reason, detail)
          select id, previous_attempt, status, status, 'FORCED_AFTER_GRACE', jsonb_build_object('owner', previous_owner, 'by', ${claim.owner}::text)
          from taken where live and status = 'CANCELLING'
        )
        select id, attempt, consumer, session_id, event_id, previous_attempt, previous_owner, live, released, waiting_retry,
               (live and status = 'CANCELLING') or forced_before as forced
        from taken`,
  )
  return rows.map((r) => ({
    id: Number(r.id),
    attempt: Number(r.attempt),
    consumer: String(r.consumer),
    sessionId: String(r.session_id),
    eventId: String(r.event_id),
    previousAttempt: Number(r.previous_attempt),
    previousOwner: (r.previous_owner as string | null) ?? null,
    live: Boolean(r.live),
    released: Boolean(r.released),
    waitingRetry: Boolean(r.waiting_retry),
    forced: Boolean(r.forced),
  }))
}
