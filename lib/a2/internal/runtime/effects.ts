/**
 * Effects: side effects outside the log (a model call, a tool, a webhook), each recorded
 * under a stable key (job id + key) so a cancel, a crash or a retry can be explained.
 *
 *   INTENT ──dispatch CAS──▶ DISPATCHED ──▶ DONE | FAILED
 *      │                         └──(aborted mid-call, not overlapSafe: the receiver is asked)──▶ DONE | FAILED | UNKNOWN
 *      └──(run no longer ACTIVE at the observed version)──▶ CANCELLED_BEFORE_DISPATCH
 *   DISPATCHED by a dead attempt ──reconcile──▶ DONE | INTENT (not done: dispatch again)
 *                                 └──(cannot tell)──▶ UNKNOWN (an operator decides)
 */
import { sql } from 'drizzle-orm'
import { A2Error, isA2Error } from '../core/errors'
import { brandOf } from '../core/brand'
import { RunAborted, abortReason } from '../core/abort'
import type { ConsumerReconcile, EffectOptions, EffectStatus, Fence, ReconcileResult } from '../core/types'
import { query, type Executor } from '../store/store'
import { resolveUnknownRun } from './end-runs'
import { LEASED } from '../core/transitions'

export type { EffectOptions, EffectStatus } from '../core/types'

/** Thrown by ctx.effect when the run was cancelled before dispatch: `fn` was not called. */
export class EffectNotDispatched extends A2Error {
  static readonly brand: symbol = brandOf('EffectNotDispatched')
  constructor(key: string) {
    super('run_cancelled', `effect "${key}" was not dispatched: the run is no longer active at the version it observed`)
  }
}

/** Thrown when an effect's outcome cannot be proven; the run becomes UNKNOWN until an operator decides. */
export class EffectUnknown extends A2Error {
  static readonly brand: symbol = brandOf('EffectUnknown')
  constructor(key: string) {
    super('conflict', `effect "${key}" was dispatched by an attempt that died and could not be reconciled`)
  }
}

/**
 * A verdict found its effect no longer DISPATCHED while its attempt still holds the run (a late
 * outcome got there first): nothing was changed (code `fenced`), and the caller goes on from
 * the stored state instead of giving the run up.
 */
export class EffectSettledMeanwhile extends A2Error {
  static readonly brand: symbol = brandOf('EffectSettledMeanwhile')
  constructor(key: string) {
    super('fenced', `effect "${key}" was settled while it was being reconciled`)
  }
}

/**
 * The calls of one attempt, from their dispatch compare-and-set until their outcome is
 * recorded, so that its ending sees them and never outruns them.
 *
 * The dispatch: `endRuns` decides from the effects as its statement's snapshot has them (and
 * as last committed for the effects that were open in it): a dispatch that commits after that
 * snapshot is taken — a handler that did not await its `ctx.effect` ends while the dispatch
 * compare-and-set is in flight — is not seen, and the run would end COMPLETED over a DISPATCHED
 * effect (ending-dispatch.test.ts, on Postgres, where the two statements can interleave).
 *
 * The call: a handler that throws while one of its calls runs (`Promise.all` of a slow call and
 * one that fails) must not end the run at once — FAILED, or a retry or a surrender another worker
 * claims at once — with the call still running: the ending would put it to the reconcile hook,
 * whose "not done" moves it back to INTENT under a terminal run and refuses its late outcome, or
 * lets the next attempt dispatch it a second time beside the first (effects-in-flight.test.ts
 * checks both). Only the attempt knows its call still runs, so it waits: the attempt is not over,
 * and keeps its lease, until each of its calls returned and its outcome was recorded. A call that
 * ignores its signal holds its attempt as a handler awaiting it would; a Stop's grace period
 * (§5) still forces the run out, and its calls are then UNKNOWN (FORCED_OUT, drain.ts).
 *
 * Both are the attempt's own work, so the attempt orders them: its ending first closes this (a
 * dispatch not yet sent is refused, `fn` not called) and waits for those in flight. No statement
 * is added: the wait is nothing when no call is in flight.
 */
export class DispatchesInFlight {
  private inFlight = 0
  private closed = false
  private idle?: () => void
  /** The ending waits for a dispatch in flight (a test observes it). */
  holdingBack = false

  /** A dispatch may go out (and is in flight until `leave`): false once the attempt is ending. */
  enter(): boolean {
    if (this.closed) return false
    this.inFlight++
    return true
  }

  leave(): void {
    if (--this.inFlight === 0) this.idle?.()
  }

  get isClosed(): boolean {
    return this.closed
  }

  /** No dispatch from now on; resolves once every call in flight returned and its outcome was recorded. */
  async close(): Promise<void> {
    this.closed = true
    if (this.inFlight === 0) return
    this.holdingBack = true
    await new Promise<void>((resolve) => (this.idle = resolve))
    this.holdingBack = false
  }
}

export interface EffectRun {
  fence: Fence
  /** cancel_version the attempt observed at claim: dispatch is valid only at this version. */
  cancelVersion: number
  signal: AbortSignal
  /** Test seam for the race suite: runs after the state was read and before the dispatch CAS. */
  beforeDispatch?: (key: string) => Promise<void>
  /** The consumer's reconcile hook: asked when the effect has no hook of its own. */
  reconcile?: ConsumerReconcile
  /** The attempt's calls in flight: its ending waits for them and refuses new ones. */
  dispatches?: DispatchesInFlight
}

export function idempotencyKey(jobId: number, key: string): string {
  return `a2-${jobId}-${key}`
}

export async function runEffect<R>(
  db: Executor,
  run: EffectRun,
  key: string,
  fn: (idempotencyKey: string, signal: AbortSignal) => Promise<R>,
  options: EffectOptions<R> = {},
): Promise<R> {
  const { fence } = run
  const stableKey = idempotencyKey(fence.jobId, key)
  if (run.dispatches?.isClosed) throw refusedAtEnd(fence, key)
  await recordIntent(db, run, key, options)
  const recorded = await replayOrReconcile(db, run, key, stableKey, options)
  if (recorded) return recorded.value
  await dispatch(db, run, key)
  // In flight from here until its outcome is recorded: the attempt's ending waits for it.
  try {
    return await callAndRecord(db, run, key, stableKey, fn, options)
  } finally {
    run.dispatches?.leave()
  }
}

/** Intent first: if this insert fails (store unreachable), nothing is dispatched — fail closed. Fenced like every write of an attempt: a superseded attempt records nothing. */
async function recordIntent<R>(db: Executor, run: EffectRun, key: string, options: EffectOptions<R>): Promise<void> {
  const { fence } = run
  await query(
    db,
    sql`insert into a2_effects (job_id, key, status, attempt, cancel_version, overlap_safe)
        select ${fence.jobId}, ${key}, 'INTENT', ${fence.attempt}, ${run.cancelVersion}, ${options.overlapSafe ?? false}
        where exists (select 1 from a2_jobs where id = ${fence.jobId} and attempt = ${fence.attempt}
                        and status in ${LEASED})
        on conflict (job_id, key) do nothing`,
  )
}

/**
 * What the effect's record already says: its result to replay (DONE: never call twice), a
 * refusal (UNKNOWN, cancelled before dispatch, in flight in this very attempt), or — for a dead
 * attempt's dispatch — the reconcile hook's verdict. Undefined: dispatch it.
 */
async function replayOrReconcile<R>(
  db: Executor,
  run: EffectRun,
  key: string,
  stableKey: string,
  options: EffectOptions<R>,
): Promise<{ value: R } | undefined> {
  const { fence } = run
  const readEffect = async () =>
    (
      await query<{ status: EffectStatus; attempt: number; result: { value: R } | null }>(
        db,
        sql`select status, attempt, result from a2_effects where job_id = ${fence.jobId} and key = ${key}`,
      )
    )[0]
  // Read twice at most: a dead attempt's effect whose late outcome lands while this attempt
  // reconciles it is decided from that outcome, read again (a settled effect never goes back
  // to DISPATCHED but by this attempt's own dispatch).
  for (let reads = 0; ; reads++) {
    const row = await readEffect()
    if (!row) throw fenced(fence, key)
    if (row.status === 'DONE') return row.result as { value: R } // replay: never call twice
    if (row.status === 'UNKNOWN') throw new EffectUnknown(key)
    if (row.status === 'CANCELLED_BEFORE_DISPATCH') throw new EffectNotDispatched(key)
    if (row.status !== 'DISPATCHED') return undefined // INTENT or FAILED: dispatch
    if (row.attempt === fence.attempt) throw new A2Error('conflict', `effect "${key}" is already in flight in this attempt`)
    try {
      return (await reconcileDispatched(db, fence, key, stableKey, options.reconcile ?? run.reconcile)) as { value: R } | undefined
    } catch (error) {
      if (!(error instanceof EffectSettledMeanwhile) || reads > 0) throw error
    }
  }
}

/**
 * The dispatch: the effect enters the attempt's calls in flight and its record goes DISPATCHED,
 * or it is refused — EffectNotDispatched when a Stop got there first, RunAborted when the run
 * lost its claim, `fenced` when another attempt holds it.
 */
async function dispatch(db: Executor, run: EffectRun, key: string): Promise<void> {
  const { fence } = run
  await run.beforeDispatch?.(key)
  // A run that lost its claim (lapsed lease, successor, shutdown) starts no new external
  // work: a successor is taking over. The intent stays for the successor to dispatch.
  const lost = run.signal.aborted ? run.signal.reason : undefined
  if (lost instanceof RunAborted && lost.isLeaseLoss) throw lost
  // The dispatch compare-and-set: only while the run is ACTIVE, at the attempt and cancel
  // version this run observed, and held (an owner released as dead, OWNER_DIED, holds it no
  // more, though its attempt number stands until the next claim takes it: its dispatch would
  // leave the next attempt an effect it cannot prove stopped). Zero rows: a cancel (or a
  // successor, or a release) got there first. The run's
  // row is share-locked until this commits, so a run cannot end (endRuns counts effects
  // under its row lock) between this check and the effect it lets through.
  if (run.dispatches && !run.dispatches.enter()) throw refusedAtEnd(fence, key)
  const dispatched = await query(
    db,
    sql`update a2_effects set status = 'DISPATCHED', attempt = ${fence.attempt}, cancel_version = ${run.cancelVersion}, updated_at = now()
        where job_id = ${fence.jobId} and key = ${key} and status in ('INTENT', 'FAILED')
          and exists (select 1 from a2_jobs where id = ${fence.jobId} and status = 'ACTIVE'
                        and attempt = ${fence.attempt} and cancel_version = ${run.cancelVersion}
                        and owner is not null
                      for share)
        returning job_id`,
  ).catch((error: unknown) => {
    run.dispatches?.leave()
    throw error
  })
  if (dispatched.length !== 1) {
    run.dispatches?.leave()
    // Recorded as cancelled only while this attempt still holds the job: a superseded or
    // released attempt must not mark the successor's effect (the successor would then refuse it).
    const cancelled = await query(
      db,
      sql`update a2_effects set status = 'CANCELLED_BEFORE_DISPATCH', updated_at = now()
          where job_id = ${fence.jobId} and key = ${key} and status in ('INTENT', 'FAILED')
            and exists (select 1 from a2_jobs where id = ${fence.jobId} and attempt = ${fence.attempt} and owner is not null)
          returning job_id`,
    )
    if (cancelled.length !== 1) {
      const [state] = await query<{ status: EffectStatus }>(db, sql`select status from a2_effects where job_id = ${fence.jobId} and key = ${key}`)
      if (state?.status !== 'CANCELLED_BEFORE_DISPATCH') throw fenced(fence, key)
    }
    throw new EffectNotDispatched(key)
  }
}

async function callAndRecord<R>(
  db: Executor,
  run: EffectRun,
  key: string,
  stableKey: string,
  fn: (idempotencyKey: string, signal: AbortSignal) => Promise<R>,
  options: EffectOptions<R>,
): Promise<R> {
  const { fence } = run
  let result: R
  try {
    result = await fn(stableKey, run.signal)
  } catch (error) {
    const message = (error instanceof Error ? error.message : String(error)).slice(0, 500)
    // Ended by its run's abort (a Stop, a lost claim): the abort's code says why, so a view can
    // show a stopped call as stopped, not as an error. A step the store refused for the Stop is
    // the Stop too, though its hint may not have fired the signal yet (a loaded worker's next
    // chunk can reach the store first).
    const aborted = abortReason(run.signal)?.code ?? (isA2Error(error, 'run_cancelled') ? 'CANCELLED' : undefined)
    if (aborted && !options.overlapSafe) {
      // An aborted request may already have reached its receiver: FAILED would be a guess, and
      // a guess that forgets a charge (effects-in-flight.test.ts). The receiver is
      // asked; without its answer the call is UNKNOWN and its run waits for an operator.
      await recordAbortedCall(db, fence, key, await askReceiver(stableKey, key, fence, options.reconcile ?? run.reconcile), { message, aborted })
      throw error
    }
    // An overlapSafe call (the chat's model call) changed nothing outside its attempt's fenced
    // appends: FAILED stays true of it.
    await recordOutcome(db, fence, key, 'FAILED', { error: { message, ...(aborted ? { aborted } : {}) } })
    throw error
  }
  await recordOutcome(db, fence, key, 'DONE', { result: { value: result ?? null } })
  return result
}

/** The reconcile hook's answer for a call of this attempt that has returned; 'unknown' when there is no hook or it fails. */
async function askReceiver(
  stableKey: string,
  key: string,
  fence: Fence,
  reconcile: EffectOptions<unknown>['reconcile'] | ConsumerReconcile | undefined,
): Promise<ReconcileResult> {
  if (!reconcile) return 'unknown'
  return (await reconcile(stableKey, { key, jobId: fence.jobId }).catch(() => 'unknown' as const)) as ReconcileResult
}

/**
 * A call that is not overlapSafe, aborted mid-flight: done (the receiver has it) → DONE with its
 * result; not done (asked once the call had returned, so no longer "may still run") → FAILED with
 * the answer beside the abort's code; cannot tell → UNKNOWN, explicitly unresolved.
 */
async function recordAbortedCall(
  db: Executor,
  fence: Fence,
  key: string,
  verdict: ReconcileResult,
  error: { message: string; aborted: string },
): Promise<void> {
  if (verdict === 'unknown') await recordOutcome(db, fence, key, 'UNKNOWN', { error })
  else if (verdict.done) await recordOutcome(db, fence, key, 'DONE', { result: { value: verdict.result ?? null } })
  else await recordOutcome(db, fence, key, 'FAILED', { error: { ...error, reconciled: 'not done' } })
}

function refusedAtEnd(fence: Fence, key: string): A2Error {
  return new A2Error('fenced', `effect "${key}" was not dispatched: attempt ${fence.attempt} of job ${fence.jobId} is ending`)
}

function fenced(fence: Fence, key: string): A2Error {
  return new A2Error('fenced', `effect "${key}" was not recorded: attempt ${fence.attempt} no longer holds job ${fence.jobId}`)
}

/**
 * The delivery record is kept apart from the run's status: a result is recorded for the
 * attempt that dispatched it even if the run was cancelled meanwhile — cancelling never
 * claims an already-sent effect was unsent.
 */
async function recordOutcome(
  db: Executor,
  fence: Fence,
  key: string,
  status: 'DONE' | 'FAILED' | 'UNKNOWN',
  values: { result?: unknown; error?: unknown },
): Promise<void> {
  const rows = await query(
    db,
    sql`update a2_effects set status = ${status}, result = ${JSON.stringify(values.result ?? null)}::jsonb,
            error = ${JSON.stringify(values.error ?? null)}::jsonb, updated_at = now()
        where job_id = ${fence.jobId} and key = ${key} and attempt = ${fence.attempt} and status in ('DISPATCHED', 'UNKNOWN')
        returning job_id`,
  )
  if (rows.length !== 1) throw new A2Error('fenced', `effect "${key}" was settled by someone else while attempt ${fence.attempt} ran it`)
  if (status === 'UNKNOWN') return // nothing was resolved
  // The truth arrived late for an effect the controller had to call UNKNOWN: record it,
  // and settle the run if nothing else about it is unresolved.
  await resolveUnknownRun(db, fence.jobId, 'EFFECT_RESOLVED_LATE', { key, status })
}

async function reconcileDispatched<R>(
  db: Executor,
  fence: Fence,
  key: string,
  stableKey: string,
  reconcile: EffectOptions<R>['reconcile'] | ConsumerReconcile | undefined,
): Promise<{ value: R } | undefined> {
  const verdict = reconcile ? await reconcile(stableKey, { key, jobId: fence.jobId }).catch(() => 'unknown' as const) : 'unknown'
  return applyVerdict(db, fence.jobId, fence.attempt, key, verdict as ReconcileResult) as Promise<{ value: R } | undefined>
}

/**
 * Settles a DISPATCHED effect of a dead attempt: done (record the result), not done (back to
 * INTENT so it may be dispatched again under the same idempotency key), or UNKNOWN. One
 * statement each, fenced on the run's attempt: the effect moves and the run's history says
 * so (status unchanged: reconciling is an event in the run, not a change of its state)
 * together, or not at all — zero rows means a successor or an operator got there first.
 *
 * "Not done" is no proof for an effect whose attempt was released as dead (OWNER_DIED) or
 * lost its lease (LEASE_EXPIRED: a stalled owner, alive, whose handler ignores its signal):
 * that owner may still be inside the call. The drain releases no run with an effect in flight
 * (drain.ts), but a dispatch that commits while the release's statement runs is not in its
 * snapshot; such an effect becomes UNKNOWN, as a forced-out attempt's does (settle.ts), and
 * its late outcome or an operator settles it. Nor is it for an effect of an attempt the drain
 * forced out (FORCED_AFTER_GRACE recorded at that attempt, drain.ts): it ignored its signal and
 * may be inside the call still, whichever drain or successor asks. Either way an overlapSafe
 * effect's "not done" is trusted: running on beside its successor does no harm.
 */
export async function applyVerdict(
  db: Executor,
  jobId: number,
  attempt: number,
  key: string,
  verdict: ReconcileResult,
): Promise<{ value: unknown } | undefined> {
  const to = verdict === 'unknown' ? 'UNKNOWN' : verdict.done ? 'DONE' : 'INTENT'
  const result = verdict !== 'unknown' && verdict.done ? JSON.stringify({ value: verdict.result ?? null }) : null
  const reason = verdict === 'unknown' ? 'EFFECT_UNRECONCILED' : verdict.done ? 'EFFECT_RECONCILED_DONE' : 'EFFECT_RECONCILED_NOT_DONE'
  const rows = await query<{ reason: string }>(
    db,
    sql`with run as (
          select id, status from a2_jobs
          where id = ${jobId} and attempt = ${attempt} and status in ${LEASED}
          for share
        ), target as (
          select e.job_id, e.key,
                 ${to} = 'INTENT' and not e.overlap_safe and exists (select 1 from a2_job_transitions t
                                              where t.job_id = e.job_id and t.attempt = e.attempt
                                                and t.reason in ('OWNER_DIED', 'LEASE_EXPIRED')) as owner_released,
                 ${to} = 'INTENT' and not e.overlap_safe and exists (select 1 from a2_job_transitions t
                                              where t.job_id = e.job_id and t.attempt = e.attempt and t.reason = 'FORCED_AFTER_GRACE') as forced_out
          from a2_effects e join run on e.job_id = run.id
          where e.key = ${key} and e.status = 'DISPATCHED'
        ), flagged as (
          select job_id, key, owner_released or forced_out as released, owner_released, forced_out from target
        ), moved as (
          update a2_effects e set status = case when t.released then 'UNKNOWN' else ${to} end,
                 result = coalesce(${result}::jsonb, e.result), updated_at = now()
          from flagged t, run where e.job_id = t.job_id and e.key = t.key and e.status = 'DISPATCHED'
          returning run.status, t.released, t.owner_released, t.forced_out
        )
        insert into a2_job_transitions (job_id, attempt, from_status, to_status, reason, detail)
        select ${jobId}, ${attempt}::int, status, status,
               case when released then 'EFFECT_UNRECONCILED' else ${reason} end,
               case when released then ${JSON.stringify({ key, reconciled: 'not done' })}::jsonb
                                        || jsonb_build_object('ownerReleased', owner_released, 'forcedOut', forced_out)
                    else ${JSON.stringify({ key })}::jsonb end
        from moved
        returning reason`,
  )
  if (rows.length !== 1) {
    // Nothing moved: either this attempt holds the run no more (fenced), or it does and the
    // effect left DISPATCHED meanwhile — its late outcome (recordOutcome) committed between
    // the caller's read and this verdict. The stored state already says what happened, so the
    // caller goes on from it; taken for a lost claim, it would leave the run held under the
    // drain's lease, unsettled, for a whole lease (unknown-settle.test.ts).
    const [state] = await query<{ held: boolean; effect: EffectStatus | null }>(
      db,
      sql`select j.attempt = ${attempt} and j.status in ${LEASED} as held, e.status as effect
          from a2_jobs j left join a2_effects e on e.job_id = j.id and e.key = ${key}
          where j.id = ${jobId}`,
    )
    if (state?.held && state.effect !== 'DISPATCHED') throw new EffectSettledMeanwhile(key)
    throw new A2Error('fenced', `effect "${key}" was not reconciled: attempt ${attempt} no longer holds job ${jobId}`)
  }
  if (verdict === 'unknown' || rows[0].reason === 'EFFECT_UNRECONCILED') throw new EffectUnknown(key)
  return verdict.done ? { value: verdict.result ?? null } : undefined
}
