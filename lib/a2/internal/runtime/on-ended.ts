/**
 * One terminal event per run, whatever ended it. A handler writes its own (the chat's
 * `finished`) when it runs to its end; a run that ended without that — stopped before any
 * attempt started (CANCELLED_BEFORE_START), settled by the drain after its attempt died,
 * out of attempts, or ended while its handler threw — is handed to the consumer's `ending`
 * hook, which writes what the handler would have. The hook may be asked twice for one run (a
 * crash between the run's end and the hook's write, a dead attempt that wrote its own event
 * before the drain settled the run): its event carries an id per job, so the second is a
 * duplicate the log answers, never a second terminal event.
 */
import { sql } from 'drizzle-orm'
import type { A2Event } from '../core/contract'
import type { EndedRun } from './consumer'
import { eventFromRow, type EventRow } from '../log/event-row'
import type { RuntimeHost } from './runtime-host'
import { describeError } from './jobs'
import { read } from '../log/append'
import { foldSession } from '../log/checkpoints'
import { throughOutage } from '../store/outage'
import { query } from '../store/store'
import type { Fence, ValidInput } from '../core/types'
import type { RunStatus } from '../core/transitions'

/** How long the hook's write is sent again through an outage: the chat's lease, 15 s. */
const ENDING_OUTAGE_MS = 15_000

/** Calls the consumer's `onEnded` hook if `fence` ended the run (COMPLETED, CANCELLED or FAILED at that attempt). */
export async function callOnEnded(host: RuntimeHost, fence: Fence, job: { sessionId: string; consumer: string }): Promise<void> {
  const hook = host.consumers.get(job.consumer)?.options.onEnded
  if (!hook) return
  try {
    await throughOutage(
      async () => {
        const [row] = await query<EventRow & { status: RunStatus; attempt: number; reason: string | null; dispatched: string[] }>(
          host.store.db,
          sql`select j.status, j.attempt,
                     (select t.reason from a2_job_transitions t where t.job_id = j.id order by t.id desc limit 1) as reason,
                     array(select f.key from a2_effects f where f.job_id = j.id
                             and f.status not in ('INTENT', 'CANCELLED_BEFORE_DISPATCH') order by f.key) as dispatched,
                     e.id, e.session_id, e.index, e.type, e.payload, e.created_at
              from a2_jobs j join a2_events e on e.session_id = j.session_id and e.index = j.event_index
              where j.id = ${fence.jobId}`,
        )
        if (!row || row.attempt !== fence.attempt || !['COMPLETED', 'CANCELLED', 'FAILED'].includes(row.status)) return
        const ended: EndedRun = {
          jobId: fence.jobId,
          sessionId: job.sessionId,
          attempt: fence.attempt,
          trigger: eventFromRow(row) as never,
          status: row.status as EndedRun['status'],
          reason: row.reason ?? row.status,
          dispatched: row.dispatched ?? [],
          // Unfenced: the run is over, and the hook's event is not one of its steps.
          append: async (...inputs) => (await host.append(job.sessionId, inputs as ValidInput[], {})).events as never,
          read: (options = {}) => read(host.store.db, job.sessionId, options) as Promise<A2Event[]> as never,
          fold: (reducer, options = {}) => foldSession(host.store, job.sessionId, reducer, { before: options.before ?? row.index }),
        }
        await hook(ended as never)
      },
      { until: performance.now() + ENDING_OUTAGE_MS },
    )
  } catch (error) {
    console.error(`[a2] the onEnded hook of job ${fence.jobId} failed`, describeError(error).message)
  }
}
