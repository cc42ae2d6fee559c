/**
 * The controller's drain: settles CANCELLING runs nobody is running (never claimed,
 * waiting for a retry, or their owner died), forces out runs that ignore their signal past
 * the grace period, and fails jobs whose last attempt's lease ran out. Every worker runs
 * one; a controller that restarts resumes from the durable CANCELLING state.
 */
import { sql } from 'drizzle-orm'
import type { RuntimeHost } from './host'
import type { ClaimedJob } from './jobs'
import { failRun, settleCancelling } from './settle'
import { query } from './store'
import type { TransitionReason } from './transitions'

export interface DrainOptions {
  /** A cancelled run that keeps going this long after CANCELLING is fenced out. */
  graceMs: number
  /** Called for a run this process is running that the drain is about to force out. */
  forceOut(jobId: number): void
}

export async function drainOnce(host: RuntimeHost, options: DrainOptions): Promise<void> {
  const db = host.store.db
  const stuck = await query<{ id: number; attempt: number; owner: string | null; live: boolean; last_error: unknown; consumer: string }>(
    db,
    sql`select id, attempt, owner, consumer, last_error,
               (owner is not null and lease_until >= now()) as live
        from a2_jobs
        where status = 'CANCELLING'
          and (owner is null or lease_until < now() or cancelling_since < now() - ${options.graceMs} * interval '1 millisecond')
        order by cancelling_since limit 100`,
  )
  for (const job of stuck) {
    const id = Number(job.id)
    if (job.live) options.forceOut(id)
    const reason: TransitionReason = job.live
      ? 'FORCED_AFTER_GRACE'
      : job.attempt === 0
        ? 'CANCELLED_BEFORE_START'
        : job.owner === null && job.last_error
          ? 'RETRY_REVOKED'
          : job.owner === null
            ? 'CANCELLED_BETWEEN_ATTEMPTS'
            : 'DRAINED_AFTER_OWNER_LOST'
    await settleCancelling(host, { jobId: id, attempt: job.attempt }, job.consumer, reason)
  }

  const exhausted = await query<{ id: number; attempt: number; session_id: string; event_id: string; consumer: string; max_attempts: number }>(
    db,
    sql`select id, attempt, session_id, event_id, consumer, max_attempts from a2_jobs
        where status = 'ACTIVE' and owner is not null and lease_until < now() and attempt >= max_attempts
        limit 100`,
  )
  for (const job of exhausted) {
    const claimed: Pick<ClaimedJob, 'id' | 'sessionId' | 'eventId' | 'consumer' | 'attempt'> = {
      id: Number(job.id),
      sessionId: job.session_id,
      eventId: job.event_id,
      consumer: job.consumer,
      attempt: job.attempt,
    }
    await failRun(host, claimed, { jobId: claimed.id, attempt: job.attempt }, {
      message: `the worker running attempt ${job.attempt} stopped renewing its lease`,
      code: 'LEASE_EXPIRED',
    }).catch(() => {})
  }
}
