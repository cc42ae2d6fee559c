import { sql, type SQL } from 'drizzle-orm'
import { jobTransitions } from '../../schema'
import type { Db, Executor } from '../store/store'

export type RunStatus = 'ACTIVE' | 'CANCELLING' | 'CANCELLED' | 'COMPLETED' | 'FAILED' | 'UNKNOWN'

/** The statuses a run can leave: it still holds its lane, and a cancel is recorded against it. */
export const OPEN_STATUSES = ['ACTIVE', 'CANCELLING', 'UNKNOWN'] as const satisfies readonly RunStatus[]
/** The statuses an attempt can hold a lease in. */
export const LEASED_STATUSES = ['ACTIVE', 'CANCELLING'] as const satisfies readonly RunStatus[]
/** The statuses of a run with a Stop recorded and no other ending: steps for it are refused (run_cancelled). */
export const STOPPED_STATUSES = ['CANCELLING', 'CANCELLED'] as const satisfies readonly RunStatus[]

/** A status set as an SQL list literal: `status in ${LEASED}` keeps each statement's text (and its prepared plan) fixed. */
function statusList(statuses: readonly RunStatus[]): SQL {
  return sql.raw(`(${statuses.map((s) => `'${s}'`).join(', ')})`)
}
export const OPEN = statusList(OPEN_STATUSES)
export const LEASED = statusList(LEASED_STATUSES)
export const STOPPED = statusList(STOPPED_STATUSES)

/**
 * Why a run changed (or why its history gained a line), one word an operator can search
 * for. PROTOCOL.md §3 gives the transitions they explain.
 */
export type TransitionReason =
  /** an appended event matched the run's abortOn */
  | 'CANCEL_APPENDED'
  /** a claim took the job over after the previous owner's lease ran out */
  | 'LEASE_EXPIRED'
  /** the previous owner's process died (its liveness connection closed); taken over before its lease ran out */
  | 'OWNER_DIED'
  /** the attempt lost its claim (or the worker shut down) and gave the job back */
  | 'SURRENDERED'
  | 'RETRY_SCHEDULED'
  /** the handler returned with no cancel */
  | 'RETURNED'
  /** the handler returned or threw after a cancel reached it */
  | 'STOPPED_BY_CANCEL'
  /** a cancel revoked the retry a failure would have scheduled */
  | 'RETRY_REVOKED'
  | 'CANCELLED_BEFORE_START'
  /** cancelled while it waited between two attempts */
  | 'CANCELLED_BETWEEN_ATTEMPTS'
  /** cancelled while its owner was gone; the drain settled it */
  | 'DRAINED_AFTER_OWNER_LOST'
  /** ignored its signal past the grace period; fenced out */
  | 'FORCED_AFTER_GRACE'
  | 'ATTEMPTS_EXHAUSTED'
  /** the handler threw NotRetryable: failed at once, whatever attempts were left */
  | 'NOT_RETRYABLE'
  /** an effect of the run could not be proven done or not done */
  | 'EFFECT_UNKNOWN'
  | 'EFFECT_UNRECONCILED'
  | 'EFFECT_RECONCILED_DONE'
  | 'EFFECT_RECONCILED_NOT_DONE'
  /** an effect the run had to call UNKNOWN reported its real outcome afterwards */
  | 'EFFECT_RESOLVED_LATE'
  | 'OPERATOR_RESOLVED'

export interface Transition {
  jobId: number
  attempt: number
  from: RunStatus | null
  to: RunStatus
  reason: TransitionReason
  detail?: unknown
}

/** Appends to a job's history; called in the same transaction as the status change it explains. */
export async function recordTransitions(executor: Executor, transitions: Transition[]): Promise<void> {
  if (transitions.length === 0) return
  const db = executor as unknown as Db
  await db.insert(jobTransitions).values(
    transitions.map((t) => ({
      jobId: t.jobId,
      attempt: t.attempt,
      fromStatus: t.from,
      toStatus: t.to,
      reason: t.reason,
      detail: t.detail ?? null,
    })),
  )
}
