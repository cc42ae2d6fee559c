/**
 * How a run ends. Every path here is a fenced compare-and-set on (job, attempt); the
 * attempt (attempt.ts) and the drain (drain.ts) both settle through these functions and
 * nowhere else.
 */
import { sql } from 'drizzle-orm'
import { abortReason } from './abort'
import { EffectNotDispatched, EffectUnknown, applyVerdict } from './effects'
import { isA2Error } from './errors'
import type { RuntimeHost } from './host'
import {
  backoffMs,
  completeJob,
  describeError,
  failureEvent,
  scheduleRetry,
  settleJob,
  surrenderJob,
  type ClaimedJob,
} from './jobs'
import type { Fence } from './log'
import { query } from './store'
import type { RunStatus, TransitionReason } from './transitions'

/** The outcome rules: how an attempt whose handler returned or threw ends, by its signal's reason. */
export async function settleAttempt(
  host: RuntimeHost,
  job: ClaimedJob,
  signal: AbortSignal,
  returned: boolean,
  error: unknown,
): Promise<void> {
  const db = host.store.db
  const fence: Fence = { jobId: job.id, attempt: job.attempt }
  const reason = abortReason(signal)
  if (reason?.code === 'FENCED_OUT') return // the controller already settled this run
  if (returned) {
    await completeJob(db, fence)
    return
  }
  if (error instanceof EffectUnknown) {
    if (!(await settleJob(db, fence, 'ACTIVE', 'UNKNOWN', 'EFFECT_UNKNOWN', describeError(error)))) {
      await settleJob(db, fence, 'CANCELLING', 'UNKNOWN', 'EFFECT_UNKNOWN', describeError(error))
    }
    return
  }
  if (reason?.isCancel || error instanceof EffectNotDispatched) {
    await settleJob(db, fence, 'CANCELLING', 'CANCELLED', 'STOPPED_BY_CANCEL', { by: reason?.event })
    return
  }
  if (reason?.code === 'SHUTDOWN') {
    // Not the run's fault: the attempt is given back with its budget refunded.
    await surrenderJob(db, fence, reason.code, { refund: true })
    return
  }
  if (reason?.isLeaseLoss) {
    if (job.attempt < job.maxAttempts) await surrenderJob(db, fence, reason.code)
    else await failRun(host, job, fence, { message: `lost its claim on the last attempt (${reason.code})`, code: reason.code })
    return
  }
  if (isA2Error(error, 'fenced')) return // a successor or the controller owns the job now
  const failure = describeError(error)
  if (job.attempt < job.maxAttempts) {
    await scheduleRetry(db, fence, backoffMs(job.attempt), failure, 'STOPPED_BY_CANCEL')
  } else {
    await failRun(host, job, fence, failure)
  }
}

/** Out of attempts: FAILED and an `a2.failed` event in the log, committed together. */
export async function failRun(
  host: RuntimeHost,
  job: Pick<ClaimedJob, 'id' | 'sessionId' | 'eventId' | 'consumer' | 'attempt'>,
  fence: Fence,
  failure: { message: string; code?: string },
): Promise<void> {
  const db = host.store.db
  let settled: RunStatus | undefined
  try {
    await host.append(
      job.sessionId,
      // One per (job, attempt): an id seen before would make the append a duplicate and skip `within`.
      [{ id: `failed-${job.id}-${job.attempt}`, ...failureEvent(job, job.attempt, failure) }],
      {
        within: async (tx) => {
          if (await settleJob(tx, fence, 'ACTIVE', 'FAILED', 'ATTEMPTS_EXHAUSTED', failure)) settled = 'FAILED'
          else if (await settleJob(tx, fence, 'CANCELLING', 'CANCELLED', 'RETRY_REVOKED', failure)) settled = 'CANCELLED'
          if (settled !== 'FAILED') throw new FailAborted()
        },
      },
    )
  } catch (error) {
    if (!(error instanceof FailAborted)) throw error
    if (settled === 'CANCELLED') await settleJob(db, fence, 'CANCELLING', 'CANCELLED', 'RETRY_REVOKED', failure)
  }
}

class FailAborted extends Error {}

/** CANCELLING → CANCELLED, or UNKNOWN while an effect of the run cannot be reconciled. */
export async function settleCancelling(host: RuntimeHost, fence: Fence, consumerName: string, reason: TransitionReason): Promise<void> {
  const db = host.store.db
  const inFlight = await query<{ key: string }>(
    db,
    sql`select key from a2_effects where job_id = ${fence.jobId} and status = 'DISPATCHED'`,
  )
  const reconcile = host.consumers.get(consumerName)?.options.reconcile
  let unknown = false
  for (const { key } of inFlight) {
    const verdict = reconcile ? await reconcile(key).catch(() => 'unknown' as const) : 'unknown'
    try {
      await applyVerdict(db, fence.jobId, fence.attempt, key, verdict)
    } catch (error) {
      if (error instanceof EffectUnknown) unknown = true
      else throw error
    }
  }
  await settleJob(db, fence, 'CANCELLING', unknown ? 'UNKNOWN' : 'CANCELLED', unknown ? 'EFFECT_UNKNOWN' : reason)
}
