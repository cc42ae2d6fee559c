/**
 * Settling a run: its effects still DISPATCHED are put to the consumer's reconcile hook, and
 * then it ends (end-runs.ts: one fenced statement that decides from the stored state of the
 * run's effects). The attempt (attempt.ts) and the drain (drain.ts) settle runs here and
 * nowhere else: `settleAttempt` turns an attempt's outcome into an ending (or a retry, or a
 * surrender), `settleFailed` ends a run FAILED with its `a2.failed` event, and `settleRun`
 * is the one path both take to an ending.
 */
import { sql } from 'drizzle-orm'
import { abortReason } from '../core/abort'
import { EffectNotDispatched, EffectSettledMeanwhile, EffectUnknown, applyVerdict, idempotencyKey } from './effects'
import { A2Error, isA2Error } from '../core/errors'
import { NotRetryable } from '../core/not-retryable'
import { endRun, endRuns, RETURNED, stopped, type EndRule } from './end-runs'
import type { RuntimeHost } from './runtime-host'
import { backoffMs, describeError, failureEvent, scheduleRetry, surrenderJob, type ClaimedJob } from './jobs'
import type { Fence, ValidInput } from '../core/types'
import type { EndOutcome } from './consumer'
import { query } from '../store/store'
import type { RunStatus } from '../core/transitions'

/** The outcome rules: how an attempt whose handler returned or threw ends, by its signal's reason. */
export async function settleAttempt(
  host: RuntimeHost,
  job: ClaimedJob,
  signal: AbortSignal,
  returned: boolean,
  error: unknown,
  /** No effect of the job can exist (its first attempt, which called no ctx.effect): nothing to reconcile. */
  options: { effectFree?: boolean } = {},
): Promise<void> {
  const fence: Fence = { jobId: job.id, attempt: job.attempt }
  const reason = abortReason(signal)
  if (reason?.code === 'FENCED_OUT') return // the drain took the run over and settles it
  const end = (rule: EndRule, detail?: unknown) =>
    settleRun(host, job.consumer, fence, rule, { detail, runningAttempt: job.attempt, effectFree: options.effectFree })
  if (returned) {
    await end(RETURNED)
    return
  }
  if (error instanceof EffectUnknown) {
    // The effect is stored UNKNOWN, so the run ends UNKNOWN (endRuns decides from it).
    await end({ ACTIVE: { to: 'FAILED', reason: 'EFFECT_UNKNOWN' }, ...stopped() }, describeError(error))
    return
  }
  if (reason?.isCancel || error instanceof EffectNotDispatched) {
    await end(stopped(), { by: reason?.event })
    return
  }
  if (reason?.code === 'SHUTDOWN') {
    // Not the run's fault: the attempt is given back with its budget refunded.
    await surrenderJob(host.store.db, fence, reason.code, { refund: true })
    return
  }
  if (reason?.isLeaseLoss) {
    if (job.attempt < job.maxAttempts) await surrenderJob(host.store.db, fence, reason.code)
    else await settleFailed(host, job, fence, { message: `lost its claim on the last attempt (${reason.code})`, code: reason.code })
    return
  }
  if (isA2Error(error, 'fenced')) return // a successor or the drain owns the job now
  const failure = describeError(error)
  // The handler said another attempt would fail the same way: the budget left is not spent.
  if (error instanceof NotRetryable) {
    await settleFailed(host, job, fence, failure, job.attempt, 'NOT_RETRYABLE')
    return
  }
  if (job.attempt < job.maxAttempts) {
    // A cancel that landed first revokes the retry: that compare-and-set ends the run, so it
    // is settled like every other ending.
    const retried = await scheduleRetry(host.store.db, fence, backoffMs(job.attempt), failure)
    if (retried === 'REVOKED') await end(stopped(), { error: failure, retryRevoked: true })
  } else {
    await settleFailed(host, job, fence, failure)
  }
}

/** Out of attempts (or told not to retry): FAILED and an `a2.failed` event in the log, committed together — or UNKNOWN/CANCELLED without the event. */
export async function settleFailed(
  host: RuntimeHost,
  job: Pick<ClaimedJob, 'id' | 'sessionId' | 'eventId' | 'consumer' | 'attempt'>,
  fence: Fence,
  failure: { message: string; code?: string },
  /** Attempts that ran (a drain failing a dead run holds it as one more). */
  attempts = job.attempt,
  reason: 'ATTEMPTS_EXHAUSTED' | 'NOT_RETRYABLE' = 'ATTEMPTS_EXHAUSTED',
): Promise<void> {
  if (!(await reconcileInFlight(host, job.consumer, fence, {}))) return
  // Out of attempts, no retry was waiting to revoke: a Stop that landed during the last one
  // stopped it, so the reason is STOPPED_BY_CANCEL, not RETRY_REVOKED (interleavings.test.ts).
  const rule: EndRule = { ACTIVE: { to: 'FAILED', reason }, ...stopped() }
  const request = { fence, rule, detail: failure }
  let ended: RunStatus | undefined
  try {
    await host.append(
      job.sessionId,
      // One per (job, attempt): an id seen before would make the append a duplicate and skip `within`.
      [{ id: `failed-${job.id}-${job.attempt}`, ...failureEvent(job, attempts, failure) }],
      {
        within: async (tx) => {
          ;[ended] = await endRuns(tx, [request])
          if (ended !== 'FAILED') throw new NotFailed()
        },
      },
    )
  } catch (error) {
    if (!(error instanceof NotFailed)) throw error
    // Cancelled, or UNKNOWN: no failure to report; the same ending without the event.
    if (ended) await endRuns(host.store.db, [request])
  }
}

class NotFailed extends Error {}

/**
 * A handler's own ending (`ctx.end`): the run's terminal events and its end, committed together.
 * `completed` goes with ACTIVE → COMPLETED; if a cancel is recorded (CANCELLING), `cancelled`
 * goes with CANCELLING → CANCELLED instead; while an effect is open (the end would make the run
 * UNKNOWN) nothing is written. The append takes the session's lock before the run's row (the
 * lock order of a push), so a Stop's append lands wholly before (the run is CANCELLING) or
 * wholly after (the run is COMPLETED, and its cancel's compare-and-set moves nothing). The
 * events carry their ids from before the first try: a try whose answer an outage lost is found
 * as a duplicate, and the run's row says how it went.
 */
export async function endWithEvents(
  host: RuntimeHost,
  job: Pick<ClaimedJob, 'sessionId'>,
  fence: Fence,
  terminal: { completed: ValidInput[]; cancelled: ValidInput[] },
): Promise<EndOutcome> {
  for (const [from, to, inputs] of [
    ['ACTIVE', 'COMPLETED', terminal.completed],
    ['CANCELLING', 'CANCELLED', terminal.cancelled],
  ] as const) {
    const rule: EndRule = { [from]: to === 'COMPLETED' ? RETURNED.ACTIVE : stopped().CANCELLING }
    try {
      const { duplicate } = await host.append(job.sessionId, inputs, {
        within: async (tx) => {
          const [ended] = await endRuns(tx, [{ fence, rule }])
          if (ended !== to) throw new NotEnded()
        },
      })
      if (!duplicate) return to
    } catch (error) {
      if (!(error instanceof NotEnded)) throw error
    }
    const [row] = await query<{ status: RunStatus; attempt: number }>(
      host.store.db,
      sql`select status, attempt from a2_jobs where id = ${fence.jobId}`,
    )
    if (row?.attempt !== fence.attempt) break
    if (row.status === to) return to // an earlier try landed
    if (row.status === from) return 'UNSETTLED' // an effect is open
    if (!(from === 'ACTIVE' && row.status === 'CANCELLING')) break
  }
  throw new A2Error('fenced', `job ${fence.jobId} attempt ${fence.attempt} no longer holds its run`)
}

class NotEnded extends Error {}

/**
 * Ends the run at `fence` as `rule` says, from the stored state of its effects, once those
 * still DISPATCHED were put to the reconcile hook (UNKNOWN while one cannot be reconciled).
 * Undefined when this attempt no longer holds the run.
 */
export async function settleRun(
  host: RuntimeHost,
  consumerName: string,
  fence: Fence,
  rule: EndRule,
  options: { detail?: unknown; runningAttempt?: number; effectFree?: boolean } = {},
): Promise<RunStatus | undefined> {
  // endRuns still decides from the stored effects, under the run's row lock; the runs that end
  // together share its statement (endRun's group commit).
  if (!options.effectFree && !(await reconcileInFlight(host, consumerName, fence, options))) return undefined
  return endRun(host.store, { fence, rule, detail: options.detail })
}

/**
 * Puts every effect of the run still DISPATCHED to the consumer's reconcile hook, each
 * verdict one fenced statement (applyVerdict). An effect dispatched by `runningAttempt` may
 * still be running (the attempt settling now, or one being forced out): "not done" is not
 * proof for it, unless it is overlapSafe, so it becomes UNKNOWN and its late outcome settles it (recordOutcome).
 * False when this attempt no longer holds the run.
 */
async function reconcileInFlight(host: RuntimeHost, consumerName: string, fence: Fence, options: { runningAttempt?: number }): Promise<boolean> {
  const db = host.store.db
  const inFlight = await query<{ key: string; attempt: number; overlap_safe: boolean }>(
    db,
    sql`select key, attempt, overlap_safe from a2_effects where job_id = ${fence.jobId} and status = 'DISPATCHED' order by key`,
  )
  const reconcile = host.consumers.get(consumerName)?.options.reconcile
  for (const effect of inFlight) {
    const asked = reconcile
      ? await reconcile(idempotencyKey(fence.jobId, effect.key), { key: effect.key, jobId: fence.jobId }).catch(() => 'unknown' as const)
      : 'unknown'
    // An overlapSafe call still running does no harm (its output reaches the log only through its
    // own attempt's fenced appends): its "not done" is proof enough, as for a released owner's.
    const mayStillRun = effect.attempt === options.runningAttempt && !effect.overlap_safe
    const verdict = asked !== 'unknown' && !asked.done && mayStillRun ? 'unknown' : asked
    try {
      await applyVerdict(db, fence.jobId, fence.attempt, effect.key, verdict)
    } catch (error) {
      // Its late outcome landed between the read above and the verdict: the stored state decides.
      if (error instanceof EffectUnknown || error instanceof EffectSettledMeanwhile) continue
      if (isA2Error(error, 'fenced')) return false
      throw error
    }
  }
  return true
}
