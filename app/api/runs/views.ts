/**
 * What each role sees of a run. An operator sees everything (worker ids, leases, transition
 * details, effect results); an end user sees their own runs' history without where they ran:
 * no worker ids (host and pid), no lease, no transition details, no effect results.
 */
import { A2Error } from '@/lib/a2'
import type { A2Server } from '@/lib/a2/server'
import { decimal } from '@/lib/http/route'

type Detail = Awaited<ReturnType<A2Server['operator']['runDetail']>>
type Run = Detail['job']

export function endUserRun(run: Run) {
  return {
    id: run.id,
    sessionId: run.sessionId,
    eventId: run.eventId,
    consumer: run.consumer,
    status: run.status,
    attempt: run.attempt,
    maxAttempts: run.maxAttempts,
    cancelVersion: run.cancelVersion,
    cancelledBy: run.cancelledBy,
    lastError: run.lastError ? { message: String((run.lastError as { message?: unknown }).message ?? 'failed') } : null,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
  }
}

type Effect = Detail['effects'][number]

/**
 * The effect ended because the user stopped its run (the model call a Stop closed): its record
 * says FAILED, which is true of the call, and the abort's code says why, so the page shows it
 * as stopped, not as an error.
 */
function stoppedByUser(effect: Effect): boolean {
  return effect.status === 'FAILED' && (effect.error as { aborted?: unknown } | null)?.aborted === 'CANCELLED'
}

export function operatorDetail(detail: Detail) {
  return { ...detail, effects: detail.effects.map((effect) => ({ ...effect, stopped: stoppedByUser(effect) })) }
}

export function endUserDetail({ job, history, effects }: Detail) {
  return {
    job: endUserRun(job),
    history: history.map(({ id, attempt, fromStatus, toStatus, reason, at }) => ({ id, attempt, fromStatus, toStatus, reason, at })),
    effects: effects.map((effect) => {
      const { key, status, attempt, cancelVersion, updatedAt } = effect
      return { key, status, attempt, cancelVersion, updatedAt, stopped: stoppedByUser(effect) }
    }),
  }
}

/** Run ids are positive int4s, in decimal (`0x10`, `2147483648` are 400s). */
export function runId(raw: string): number {
  const id = decimal(raw, 'run id', 1)
  if (id === undefined) throw new A2Error('bad_request', 'run id is required')
  return id
}
