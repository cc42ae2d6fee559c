/**
 * The log: append and read. Every append takes the session's row lock and assigns
 * contiguous indexes under it (so commit order equals index order and a tail reading
 * `index > cursor` never skips); an admitted append also writes one job per matching consumer and
 * records each cancel as a compare-and-set (admitted-append.ts), and each append NOTIFYs once.
 */
import { sql } from 'drizzle-orm'
import type { A2Event } from '../core/contract'
import { A2Error } from '../core/errors'
import { EVENT_COLUMNS, eventFromRow, type EventRow } from './event-row'
import { query, type Executor, type Store } from '../store/store'
import { appendSteps } from './batched-appends'
import { sessionHintsSent } from './step-hints'
import { sameEventsAgain } from './append-checks'
import { appendAdmitted, type AppendOptions, type AppendResult } from './admitted-append'

import type { Routing, ValidInput } from '../core/types'
export type { CancelRoute, Fence, JobRoute, Routing, SessionCaps, ValidInput } from '../core/types'

export type { AppendOptions, AppendResult } from './admitted-append'

/**
 * Two ways in, by what the append carries:
 * - a server's batch that starts and cancels nothing, for no owner and with nothing of the
 *   caller's to commit with it (a consumer's chunks, its other events) goes to the
 *   cross-session group commit (batched-appends.ts);
 * - everything else is an admitted append (admitted-append.ts: a client's push, or a server's
 *   append that starts or cancels runs): one statement, or a transaction when the caller's own
 *   rows commit with the events (`within`).
 */
export async function append(
  store: Store,
  routing: Routing,
  sessionId: string,
  inputs: readonly ValidInput[],
  options: AppendOptions = {},
): Promise<AppendResult> {
  if (inputs.length === 0) throw new A2Error('bad_request', 'nothing to append')
  const routed = inputs.some((input) => routing.jobsFor(input.type).length > 0 || routing.cancelsFor(input.type).length > 0)
  // A fenced batch may carry ids (an attempt names its events so that a try the outage lost
  // the answer of is found in the log, not written twice: outage.ts); the events' unique
  // (session, id) index refuses a second copy there (landedAlready reads the first).
  if (!routed && options.owner === undefined && !options.within && (options.fence !== undefined || inputs.every((input) => !input.id))) {
    // The cap counts steps only: a run's other server events (its terminal one) always land, so it can end.
    const cap = inputs.some((input) => input.stepOf) ? options.stepCap : undefined
    return { events: await appendSteps(store, sessionId, inputs, options.fence, cap), duplicate: false }
  }
  // A consumer's own append that notifies in its commit is heard after its steps (step-hints.ts).
  if (options.fence !== undefined) await sessionHintsSent(store, sessionId)
  return appendAdmitted(store, routing, sessionId, inputs, options)
}

/**
 * The events of `inputs` (every one with an id) if they are already in the log: a write whose
 * answer an outage lost landed, or a second copy was refused by the unique (session, id) index.
 */
export async function landedAlready(tx: Executor, sessionId: string, inputs: readonly ValidInput[]): Promise<A2Event[] | undefined> {
  const ids = inputs.flatMap((input) => (input.id ? [input.id] : []))
  if (ids.length === 0) return undefined
  const existing = await query<EventRow>(
    tx,
    sql`select ${EVENT_COLUMNS} from a2_events where session_id = ${sessionId} and id in ${ids} order by index`,
  )
  if (existing.length === 0) return undefined
  return sameEventsAgain(existing.map(eventFromRow), inputs)
}

export async function read(
  executor: Executor,
  sessionId: string,
  options: { after?: number; limit?: number; before?: number } = {},
): Promise<A2Event[]> {
  const rows = await query<EventRow>(
    executor,
    sql`select ${EVENT_COLUMNS} from a2_events
        where session_id = ${sessionId} and index > ${options.after ?? -1}
          ${options.before !== undefined ? sql`and index < ${options.before}` : sql``}
        order by index
        limit ${options.limit ?? 1000}`,
  )
  return rows.map(eventFromRow)
}
