/**
 * What an append reads before it writes, in one statement and without a lock: the session
 * (its owner, and its head for the events' provisional indexes), the events a push names by
 * id, and the session's open runs with the events that started them. A push's admission
 * decides on it (references, "already running"), and the one-statement append evaluates
 * abortOn predicates on its open runs; the append then re-checks under the session's lock
 * that no run opened since (admitted-append.ts).
 */
import { sql } from 'drizzle-orm'
import type { A2Event } from '../core/contract'
import { A2Error } from '../core/errors'
import { eventFromRow, jsonbRows, type EventRow } from './event-row'
import { query, type Executor } from '../store/store'
import { OPEN, type RunStatus } from '../core/transitions'

export interface OpenRunRead {
  jobId: number
  consumer: string
  status: RunStatus
  /** A cancel is already recorded against it (an UNKNOWN run that was stopped). */
  cancelled: boolean
  /** The event that started the run: what an abortOn predicate compares with. */
  trigger: A2Event
}

export interface AdmitContext {
  head: number
  /** The session's events with the ids asked for (missing ids are left out). */
  events: A2Event[]
  /** Runs not yet settled (OPEN_STATUSES), in job id order. */
  unsettledRuns: OpenRunRead[]
}

const EVENT_JSON = sql.raw(
  `jsonb_build_object('id', e.id, 'session_id', e.session_id, 'index', e.index, 'type', e.type, 'payload', e.payload, 'created_at', e.created_at)`,
)

/** Reads a session's push context; `owner` set: someone else's session is `not_found`, like a missing one. */
export async function readAdmitContext(
  executor: Executor,
  sessionId: string,
  options: { owner?: string; ids?: readonly string[] } = {},
): Promise<AdmitContext> {
  const ids = options.ids ?? []
  // The ids are looked up with = any(array(…)), not in (select …): this statement is prepared,
  // and the semi-join's generic plan read every event of the session (session-length.test.ts).
  const [row] = await query<{ owner: string; head: number; events: EventRow[] | null; open: OpenRow[] | null }>(
    executor,
    sql`select s.owner, s.head,
               ${
                 ids.length > 0
                   ? sql`(select jsonb_agg(${EVENT_JSON}) from a2_events e
                          where e.session_id = s.id and e.id = any(array(select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))))`
                   : sql`null::jsonb`
               } as events,
               (select jsonb_agg(jsonb_build_object('job', j.id, 'consumer', j.consumer, 'status', j.status,
                                                    'cancelled', j.cancelled_by is not null, 'event', ${EVENT_JSON}) order by j.id)
                from a2_jobs j join a2_events e on e.session_id = j.session_id and e.index = j.event_index
                where j.session_id = s.id and j.status in ${OPEN}) as open
        from a2_sessions s where s.id = ${sessionId}`,
  )
  if (!row || (options.owner !== undefined && row.owner !== options.owner)) throw new A2Error('not_found', 'no such session')
  return {
    head: row.head,
    events: jsonbRows(row.events).map(eventFromRow),
    unsettledRuns: jsonbRows(row.open).map((r) => ({
      jobId: Number(r.job),
      consumer: r.consumer,
      status: r.status,
      cancelled: r.cancelled,
      trigger: eventFromRow(r.event),
    })),
  }
}

interface OpenRow {
  job: number
  consumer: string
  status: RunStatus
  cancelled: boolean
  event: EventRow
}
