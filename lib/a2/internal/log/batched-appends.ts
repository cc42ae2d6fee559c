/**
 * The hot path — consumers' chunk batches (server-written, no ids to deduplicate, nothing
 * to start or cancel) — group-committed across sessions (store/group-commit.ts): at most
 * MAX_IN_FLIGHT statements run at once, and batches that arrive meanwhile wait and go
 * together in the next one, a call of `a2_append_steps_many` (migrations 0002, 0009), which
 * takes the transactional append's locks in its order, per batch, and notifies no one: the
 * landed batches are announced after the commit (step-hints.ts). Idle, a batch goes alone at
 * once (no window, no added latency); under load the statements grow by themselves instead
 * of queueing commits. Bench, 100 streams at 50 tokens/s on 2 cores: ~1,700 single-session
 * commits/s, each serialised on the NOTIFY queue's lock and a WAL flush, were what the
 * tokens queued behind.
 */
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { A2Event } from '../core/contract'
import { A2Error } from '../core/errors'
import { encodeStepBatch, type Hint } from '../core/wire'
import { isoTime } from './event-row'
import type { Fence, ValidInput } from '../core/types'
import { sessionFull } from './append-checks'
import { GroupCommit, type Outcome } from '../store/group-commit'
import { query, type Store } from '../store/store'
import { announcement, announceSteps } from './step-hints'

/**
 * Four statements at once. Throughput needs two (one commits — WAL flush, NOTIFY — while the
 * next runs), but a batch that finds every slot taken waits for one, and under load that wait
 * is most of a token's time before its append begins: four slots against two took token →
 * append began p50 from 116-135 to 79-102 ms at 100 streams (bench/README.md, "Four step
 * statements in flight", has the runs). Eight would leave the worker's other statements two of
 * its pool's ten connections. Each statement still takes its sessions' locks in id order.
 */
const MAX_IN_FLIGHT = 4
/** Bounds one statement (and so how long it holds its sessions' locks, ~5 ms at 64 sessions). */
const MAX_BATCHES_PER_STATEMENT = 64
const MAX_EVENTS_PER_STATEMENT = 1_024

interface Batch {
  sessionId: string
  fence?: Fence
  maxEvents?: number
  runs: string[]
  items: Array<{ id: string; type: string; payload: unknown }>
  /** The batch as the statement's jsonb takes it. */
  json: string
}

/** One per batch: where its events start, or why it was refused. */
interface Row {
  o_batch: number
  o_refused: 'not_found' | 'fenced' | 'run_cancelled' | 'session_full' | null
  o_start: number | null
  o_created_at: Date | string | null
}

const committers = new WeakMap<Store, GroupCommit<Batch, A2Event[]>>()

/**
 * Appends one consumer's batch of step events to a session, committed together with other
 * sessions' batches. With `maxEvents`, a batch that would take the session past it is refused
 * `session_full` (steps count against the log's size).
 */
export async function appendSteps(
  store: Store,
  sessionId: string,
  inputs: readonly ValidInput[],
  fence?: Fence,
  maxEvents?: number,
): Promise<A2Event[]> {
  const runs = [...new Set(inputs.flatMap((input) => (input.stepOf ? [input.stepOf] : [])))]
  const items = inputs.map((input) => ({ id: input.id ?? randomUUID(), type: input.type, payload: input.payload ?? null }))
  // Serialised here, so a payload that cannot be fails its own caller only.
  const json = encodeStepBatch({ sessionId, jobId: fence?.jobId ?? null, attempt: fence?.attempt ?? null, runs, events: items, maxEvents })
  return committerFor(store).submit({ sessionId, fence, maxEvents, runs, items, json })
}

/**
 * One per store. On PGlite a statement runs synchronously on this process's event loop, so one
 * started at once is over before the next batch can arrive: every batch would be its own statement
 * (at 500 chats 1.00 batches per statement, against 17–20 when a turn's batches go together) and a
 * backlog would run statement after statement in one loop turn, during which no connection would be
 * accepted. There the committer gathers a loop turn (after the sockets were read) and sends what
 * it submitted as one statement. On Postgres the statement runs elsewhere, and batches that
 * arrive meanwhile already wait for the next one.
 */
function committerFor(store: Store): GroupCommit<Batch, A2Event[]> {
  let committer = committers.get(store)
  if (!committer) {
    committer = new GroupCommit<Batch, A2Event[]>({
      maxInFlight: MAX_IN_FLIGHT,
      gatherTurn: store.kind === 'pglite',
      take: oldestWithinBounds,
      send: async (batches) => {
        const payload = `[${batches.map((b) => b.json).join(',')}]`
        const { rows, announced } = runStatement(store, payload)
        const byBatch = new Map((await rows).map((row) => [row.o_batch, row]))
        const outcomes = batches.map((batch, i) => outcomeOf(batch, byBatch.get(i + 1)))
        // Committed: this process's tails have them now, other processes from the announcement.
        const hints = outcomes.flatMap((o): Hint[] => ('value' in o && o.value.length > 0 ? [hintOf(o.value)] : []))
        announceSteps(store, hints, payload, announced)
        return outcomes
      },
    })
    committers.set(store, committer)
  }
  return committer
}

/** The oldest waiting batches, up to one statement's bounds (always at least one), in order: a session's batches never pass each other. */
function oldestWithinBounds(waiting: readonly Batch[]): { batch: Batch[]; rest: Batch[] } {
  let events = 0
  let n = 0
  while (n < waiting.length && n < MAX_BATCHES_PER_STATEMENT) {
    events += waiting[n].items.length
    if (n > 0 && events > MAX_EVENTS_PER_STATEMENT) break
    n++
  }
  return { batch: waiting.slice(0, n), rest: waiting.slice(n) }
}

/** The step statement, and on Postgres its announcement sent right behind it (step-hints.ts). */
function runStatement(store: Store, payload: string): { rows: Promise<Row[]>; announced?: Promise<unknown> } {
  const statement = sql`select * from a2_append_steps_many(${payload}::jsonb)`
  if (!store.inOrder) return { rows: query<Row>(store.db, statement) }
  const { first, second } = store.inOrder<Row>(statement, announcement(store, payload))
  return { rows: first, announced: second }
}

/** What tails learn of a landed batch: the session's new head and the events. */
function hintOf(events: A2Event[]): Hint {
  const last = events[events.length - 1]
  return { sessionId: last.sessionId, head: last.index + 1, events }
}

function outcomeOf(batch: Batch, row: Row | undefined): Outcome<A2Event[]> {
  if (row?.o_refused === 'not_found') return { error: new A2Error('not_found', 'no such session') }
  if (row?.o_refused === 'fenced') {
    return { error: new A2Error('fenced', `attempt ${batch.fence?.attempt} of job ${batch.fence?.jobId} no longer holds the job`) }
  }
  if (row?.o_refused === 'session_full') return { error: sessionFull('events', { maxEvents: batch.maxEvents ?? 0, maxPushedBytes: 0 }) }
  if (row?.o_refused === 'run_cancelled') return { error: new A2Error('run_cancelled', `run ${batch.runs.join(', ')} is cancelled`) }
  if (row?.o_start == null || row.o_created_at == null) return { error: new Error('a2: a step batch got no answer from a2_append_steps_many') }
  const start = row.o_start
  const createdAt = isoTime(row.o_created_at)
  return {
    value: batch.items.map((item, k) => ({
      id: item.id,
      sessionId: batch.sessionId,
      index: start + k,
      type: item.type,
      payload: item.payload,
      createdAt,
    })),
  }
}
