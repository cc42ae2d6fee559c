/**
 * An append in one round trip: the `a2_push` function (sql/0006_push_function.ts) takes the
 * session's lock, checks, inserts the events and their jobs, records each cancel as a
 * compare-and-set with its history, and NOTIFYs, in one statement outside any transaction.
 * What a Stop waits for: the transactional append took nine round trips under the session's
 * lock (a Stop through the app's route: 14 statements, 8.6 ms p50 idle).
 *
 * abortOn predicates run here, in the app's code, on the open runs read before the call
 * (push-context.ts); the function refuses with 'stale' when a run this did not see is open
 * under the lock, and the caller falls back to the transactional append.
 */
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { A2Event } from './contract'
import { A2Error } from './errors'
import { eventFromRow, isoTime, jsonbRows, type EventRow } from './event-row'
import { pushedBytes, sameEventsAgain, sessionFull } from './append-checks'
import { readPushContext, type OpenRunRead } from './push-context'
import { query, type Store } from './store'
import type { Routing, SessionCaps, ValidInput } from './types'
import { JOBS_CHANNEL, MAX_CANCELS_PER_HINT, TAIL_CHANNEL } from './wire'

export interface OneStatementOptions {
  owner?: string
  caps?: SessionCaps
  /** The push's own read of the session (push-context.ts), when it made one. */
  context?: { head: number; openRuns: readonly OpenRunRead[] }
}

/** What `a2_push` is asked to do: the events, their jobs, and each cancel's targets. */
interface Plan {
  events: Array<{ id: string; type: string; payload: unknown }>
  jobs: Array<{ e: number; c: string; l: string | null; m: number }>
  /** `s`/`t` only for a predicate: the runs it saw and the ones it chose. */
  cancels: Array<{ e: number; c: string; s?: number[]; t?: number[] }>
}

/**
 * Appends in one statement, or answers why it cannot: 'unsupported' (a predicate would have to
 * judge a run started by an earlier event of the same push) or 'stale' (a run opened after
 * the read). Fences, `within` and steps are the transactional append's (log.ts).
 */
export async function appendInOneStatement(
  store: Store,
  routing: Routing,
  sessionId: string,
  inputs: readonly ValidInput[],
  options: OneStatementOptions,
): Promise<{ events: A2Event[]; duplicate: boolean } | 'unsupported' | 'stale'> {
  const needsRuns = inputs.some((input) => routing.cancelsFor(input.type).some((route) => route.predicate))
  const context = options.context ?? (needsRuns ? await readPushContext(store.db, sessionId, { owner: options.owner }) : undefined)
  const plan = planOf(routing, sessionId, inputs, context)
  if (!plan) return 'unsupported'
  const routed = inputs.some((input) => routing.jobsFor(input.type).length > 0 || routing.cancelsFor(input.type).length > 0)
  const clientIds = inputs.flatMap((input) => (input.id ? [input.id] : []))
  const [answer] = await query<{
    o_refused: string | null
    o_start: number | null
    o_created_at: Date | string | null
    o_existing: EventRow[] | string | null
  }>(
    store.db,
    sql`select o_refused, o_start, o_created_at, o_existing from a2_push(
          ${sessionId}, ${options.owner ?? null}, ${JSON.stringify(plan.events)}::jsonb, ${JSON.stringify(clientIds)}::jsonb,
          ${options.caps ? pushedBytes(inputs) : 0}, ${options.caps?.maxEvents ?? null}::integer, ${options.caps?.maxPushedBytes ?? null}::bigint,
          ${JSON.stringify(plan.jobs)}::jsonb, ${JSON.stringify(plan.cancels)}::jsonb,
          ${routed ? JOBS_CHANNEL : TAIL_CHANNEL}, ${MAX_CANCELS_PER_HINT})`,
  )
  switch (answer.o_refused) {
    case null:
      return {
        events: plan.events.map((event, i) => ({
          ...event,
          sessionId,
          index: answer.o_start! + i,
          createdAt: isoTime(answer.o_created_at!),
        })),
        duplicate: false,
      }
    case 'not_found':
      throw new A2Error('not_found', 'no such session')
    case 'duplicate':
      return { events: sameEventsAgain(jsonbRows(answer.o_existing).map(eventFromRow), inputs), duplicate: true }
    case 'session_full_events':
      throw sessionFull('events', options.caps!)
    case 'session_full_bytes':
      throw sessionFull('bytes', options.caps!)
    case 'stale':
      return 'stale'
    default:
      throw new Error(`a2_push answered ${answer.o_refused}`)
  }
}

function planOf(
  routing: Routing,
  sessionId: string,
  inputs: readonly ValidInput[],
  context: { head: number; openRuns: readonly OpenRunRead[] } | undefined,
): Plan | undefined {
  const plan: Plan = { events: [], jobs: [], cancels: [] }
  const startedHere = new Set<string>()
  const now = new Date().toISOString()
  for (const [e, input] of inputs.entries()) {
    const event = { id: input.id ?? randomUUID(), type: input.type, payload: input.payload ?? null }
    plan.events.push(event)
    for (const route of routing.cancelsFor(input.type)) {
      if (!route.predicate) {
        plan.cancels.push({ e, c: route.consumer })
        continue
      }
      // A run this push starts has no trigger row to judge yet: the transactional append does.
      if (startedHere.has(route.consumer) || !context) return undefined
      // The event as it will be stored; its index is provisional (where the head was when read):
      // a cancel only ever reaches runs started before it, whatever lands in between.
      const cancelling: A2Event = { ...event, sessionId, index: context.head + e, createdAt: now }
      const seen = context.openRuns.filter(
        (run) => run.consumer === route.consumer && (run.status === 'ACTIVE' || (run.status === 'UNKNOWN' && !run.cancelled)),
      )
      const chosen = seen.filter((run) => route.predicate!(cancelling, run.trigger))
      plan.cancels.push({ e, c: route.consumer, s: seen.map((run) => run.jobId), t: chosen.map((run) => run.jobId) })
    }
    for (const route of routing.jobsFor(input.type)) {
      plan.jobs.push({ e, c: route.consumer, l: route.lane, m: route.maxAttempts })
      startedHere.add(route.consumer)
    }
  }
  return plan
}
