import { jobTransitions } from '../schema'
import type { Executor } from './store'

export type RunStatus = 'ACTIVE' | 'CANCELLING' | 'CANCELLED' | 'COMPLETED' | 'FAILED' | 'UNKNOWN'

export interface Transition {
  jobId: number
  attempt: number
  from: RunStatus | null
  to: RunStatus
  /** Why, in one SCREAMING_SNAKE word an operator can search for (CANCELLED_BEFORE_START, RETRY_REVOKED, …). */
  reason: string
  detail?: unknown
}

/** Appends to a job's history; called in the same transaction as the status change it explains. */
export async function recordTransitions(executor: Executor, transitions: Transition[]): Promise<void> {
  if (transitions.length === 0) return
  const db = executor as unknown as import('./store').Db
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
