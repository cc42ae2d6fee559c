/**
 * The admitted append: the one writer of events that start or cancel runs, of every client's
 * push, and of every append a step batch does not carry: the SQL functions of sql/0008_one_push.ts. `a2_admit` makes every check under
 * the session's row lock, `a2_write` inserts the events and their jobs, records each cancel as
 * a compare-and-set with its history, and NOTIFYs once; `a2_push` is the two in one statement,
 * outside any transaction: what a Stop waits for is one round trip.
 *
 * abortOn predicates run here, in the app's code, on the open runs read before the call
 * (admit-context.ts), and on the runs this push itself starts. When a run this did not see is
 * open under the lock ('stale'), or the caller's own rows must commit with the events
 * (`within`: a run's FAILED status and its `a2.failed`, a rename), the same functions run in a
 * transaction that takes the session's lock first and judges the predicates under it.
 */
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { A2Event } from '../core/contract'
import { A2Error } from '../core/errors'
import { eventFromRow, isoTime, jsonbRows, type EventRow } from './event-row'
import { pushedBytes, sameEventsAgain, sessionFull } from './append-checks'
import { readAdmitContext, type AdmitContext } from './admit-context'
import { query, type Executor, type Store } from '../store/store'
import type { Fence, Routing, SessionCaps, ValidInput } from '../core/types'
import { JOBS_CHANNEL, MAX_CANCELS_PER_HINT, TAIL_CHANNEL } from '../core/wire'

export interface AppendOptions {
  /** Set for pushes: the session must belong to this owner. */
  owner?: string
  /** Set for pushes: the session's caps (a 413 `session_full` past them; never for a Stop of an open run). */
  caps?: SessionCaps
  /** The session's cap on events for steps (a consumer's chunks count against the log's size). */
  stepCap?: number
  fence?: Fence
  /** Runs inside the append's transaction, after its checks and before its writes; a throw rolls it all back. */
  within?: (tx: Executor) => Promise<void>
  /** The session as a push read it before its admission (admit-context.ts), reused for the predicates. */
  context?: AdmitContext
}

export interface AppendResult {
  events: A2Event[]
  /** Every input carried an id that was already in the log: nothing was written. */
  duplicate: boolean
}

/** What `a2_write` is asked to do: the events, their jobs, and each cancel's targets. */
interface Plan {
  events: Array<{ id: string; type: string; payload: unknown }>
  jobs: Array<{ e: number; c: string; l: string | null; m: number }>
  /** `s`/`t`/`n` only for a predicate: the runs it saw, the ones it chose, and the ones of this push it chose (by event ordinal). */
  cancels: Array<{ e: number; c: string; s?: number[]; t?: number[]; n?: number[] }>
}

interface Admitted {
  o_refused: string | null
  o_existing: EventRow[] | string | null
}

export async function appendAdmitted(
  store: Store,
  routing: Routing,
  sessionId: string,
  inputs: readonly ValidInput[],
  options: AppendOptions,
): Promise<AppendResult> {
  if (!options.within) {
    const judged = needsRuns(routing, inputs)
      ? (options.context ?? (await readAdmitContext(store.db, sessionId, { owner: options.owner })))
      : undefined
    const done = await inOneStatement(store.db, routing, sessionId, inputs, options, judged)
    if (done !== 'stale') return done
  }
  return inTransaction(store, routing, sessionId, inputs, options)
}

function inOneStatement(
  db: Executor,
  routing: Routing,
  sessionId: string,
  inputs: readonly ValidInput[],
  options: AppendOptions,
  context: AdmitContext | undefined,
): Promise<AppendResult | 'stale'> {
  const plan = planOf(routing, sessionId, inputs, context)
  return query<Admitted & { o_start: number | null; o_created_at: Date | string | null }>(
    db,
    sql`select o_refused, o_start, o_created_at, o_existing from a2_push(
          ${sessionId}, ${options.owner ?? null}, ${JSON.stringify(plan.events)}::jsonb, ${clientIds(inputs)}::jsonb,
          ${bytesOf(inputs, options)}, ${options.caps?.maxEvents ?? null}::integer, ${options.caps?.maxPushedBytes ?? null}::bigint,
          ${JSON.stringify(plan.jobs)}::jsonb, ${JSON.stringify(plan.cancels)}::jsonb,
          ${options.fence?.jobId ?? null}::bigint, ${options.fence?.attempt ?? null}::integer, ${stepRuns(inputs)}::jsonb,
          ${options.stepCap ?? null}::integer, ${channelOf(routing, inputs)}, ${MAX_CANCELS_PER_HINT})`,
  ).then(([answer]) => {
    if (answer.o_refused === 'stale') return 'stale'
    throwRefusal(answer, options)
    return answer.o_refused === 'duplicate'
      ? duplicateOf(answer, inputs)
      : { events: landed(plan, sessionId, answer.o_start!, answer.o_created_at!), duplicate: false }
  })
}

/**
 * The same push with the session's lock taken first, so the open runs the predicates judge are
 * the ones the write sees, and with the caller's `within` between the checks and the writes.
 * A refusal or a throw rolls everything back, `within`'s rows too.
 */
async function inTransaction(
  store: Store,
  routing: Routing,
  sessionId: string,
  inputs: readonly ValidInput[],
  options: AppendOptions,
): Promise<AppendResult> {
  return store.db.transaction(async (tx) => {
    const [locked] = await query<{ id: string }>(tx, sql`select id from a2_sessions where id = ${sessionId} for no key update`)
    if (!locked) throw new A2Error('not_found', 'no such session')
    const context = needsRuns(routing, inputs) ? await readAdmitContext(tx, sessionId, { owner: options.owner }) : undefined
    const plan = planOf(routing, sessionId, inputs, context)
    const [admitted] = await query<Admitted & { o_head: number | null }>(
      tx,
      sql`select o_refused, o_head, o_existing from a2_admit(
              ${sessionId}, ${options.owner ?? null}, ${inputs.length}, ${clientIds(inputs)}::jsonb, ${bytesOf(inputs, options)},
              ${options.caps?.maxEvents ?? null}::integer, ${options.caps?.maxPushedBytes ?? null}::bigint, ${JSON.stringify(plan.cancels)}::jsonb,
              ${options.fence?.jobId ?? null}::bigint, ${options.fence?.attempt ?? null}::integer, ${stepRuns(inputs)}::jsonb,
              ${options.stepCap ?? null}::integer)`,
    )
    // The open runs were read under the lock this transaction holds: none can be unseen.
    if (admitted.o_refused === 'stale') throw new Error('a2_admit answered stale under the session lock')
    throwRefusal(admitted, options)
    if (admitted.o_refused === 'duplicate') return duplicateOf(admitted, inputs)
    await options.within?.(tx)
    const [written] = await query<{ o_start: number; o_created_at: Date | string }>(
      tx,
      sql`select o_start, o_created_at from a2_write(
              ${sessionId}, ${options.owner ?? null}, ${admitted.o_head}::integer, ${JSON.stringify(plan.events)}::jsonb,
              ${bytesOf(inputs, options)}, ${JSON.stringify(plan.jobs)}::jsonb, ${JSON.stringify(plan.cancels)}::jsonb,
              ${channelOf(routing, inputs)}, ${MAX_CANCELS_PER_HINT})`,
    )
    return { events: landed(plan, sessionId, written.o_start, written.o_created_at), duplicate: false }
  })
}

/** Throws the typed error of a refusal; 'duplicate' and 'stale' are answers, not errors. */
function throwRefusal(answer: Admitted, options: AppendOptions): void {
  const refused = answer.o_refused
  if (refused === null || refused === 'duplicate' || refused === 'stale') return
  const caps = options.caps ?? { maxEvents: options.stepCap ?? 0, maxPushedBytes: 0 }
  if (refused === 'not_found') throw new A2Error('not_found', 'no such session')
  if (refused === 'session_full_events') throw sessionFull('events', caps)
  if (refused === 'session_full_bytes') throw sessionFull('bytes', caps)
  if (refused === 'fenced') throw new A2Error('fenced', `attempt ${options.fence?.attempt} of job ${options.fence?.jobId} no longer holds the job`)
  if (refused.startsWith('run_cancelled ')) throw new A2Error('run_cancelled', `run ${refused.slice('run_cancelled '.length)}`)
  throw new Error(`a2_admit answered ${refused}`)
}

function duplicateOf(answer: Admitted, inputs: readonly ValidInput[]): AppendResult {
  return { events: sameEventsAgain(jsonbRows(answer.o_existing).map(eventFromRow), inputs), duplicate: true }
}

function landed(plan: Plan, sessionId: string, start: number, createdAt: Date | string): A2Event[] {
  return plan.events.map((event, i) => ({ ...event, sessionId, index: start + i, createdAt: isoTime(createdAt) }))
}

const clientIds = (inputs: readonly ValidInput[]) => JSON.stringify(inputs.flatMap((input) => (input.id ? [input.id] : [])))
const stepRuns = (inputs: readonly ValidInput[]) => JSON.stringify([...new Set(inputs.flatMap((input) => (input.stepOf ? [input.stepOf] : [])))])
/** A push's payloads count against the session's pushed bytes; a server append's do not. */
const bytesOf = (inputs: readonly ValidInput[], options: AppendOptions) => (options.caps ? pushedBytes(inputs) : 0)

/** Workers need to hear of new jobs and cancels; a plain append's hint goes to the tails alone. */
function channelOf(routing: Routing, inputs: readonly ValidInput[]): string {
  return inputs.some((input) => routing.jobsFor(input.type).length > 0 || routing.cancelsFor(input.type).length > 0) ? JOBS_CHANNEL : TAIL_CHANNEL
}

function needsRuns(routing: Routing, inputs: readonly ValidInput[]): boolean {
  return inputs.some((input) => routing.cancelsFor(input.type).some((route) => route.predicate))
}

function planOf(routing: Routing, sessionId: string, inputs: readonly ValidInput[], context: AdmitContext | undefined): Plan {
  const plan: Plan = { events: [], jobs: [], cancels: [] }
  const now = new Date().toISOString()
  // Each event as it will be stored; its index is provisional (where the head was when read):
  // a cancel only ever reaches runs started before it, whatever lands in between.
  const stored = (e: number): A2Event => ({ ...plan.events[e], sessionId, index: (context?.head ?? 0) + e, createdAt: now })
  for (const [e, input] of inputs.entries()) {
    plan.events.push({ id: input.id ?? randomUUID(), type: input.type, payload: input.payload ?? null })
    for (const route of routing.cancelsFor(input.type)) {
      if (!route.predicate) {
        plan.cancels.push({ e, c: route.consumer })
        continue
      }
      const cancelling = stored(e)
      const seen = context!.unsettledRuns.filter(
        (run) => run.consumer === route.consumer && (run.status === 'ACTIVE' || (run.status === 'UNKNOWN' && !run.cancelled)),
      )
      const chosen = seen.filter((run) => route.predicate!(cancelling, run.trigger))
      // Runs this push starts before this event: judged on the events as they will be stored.
      const startedHere = plan.jobs.filter((job) => job.c === route.consumer && job.e < e && route.predicate!(cancelling, stored(job.e)))
      plan.cancels.push({
        e,
        c: route.consumer,
        s: seen.map((run) => run.jobId),
        t: chosen.map((run) => run.jobId),
        n: startedHere.map((job) => job.e),
      })
    }
    for (const route of routing.jobsFor(input.type)) plan.jobs.push({ e, c: route.consumer, l: route.lane, m: route.maxAttempts })
  }
  return plan
}
