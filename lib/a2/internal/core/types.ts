/**
 * Types the runtime's modules share, in a module of their own so that no two of them import
 * each other for a type (the log and the step batches, a consumer and its effects).
 */

import type { A2Event } from './contract'

/** An input that passed the contract: what the log appends. */
export interface ValidInput {
  id?: string
  type: string
  payload: unknown
  /** The run this event is a step of (admission refuses steps of a cancelled run). */
  stepOf?: string
}

/** An attempt's fencing token: its writes land only while it still holds the job. */
export interface Fence {
  jobId: number
  attempt: number
}

export type EffectStatus = 'INTENT' | 'DISPATCHED' | 'DONE' | 'FAILED' | 'CANCELLED_BEFORE_DISPATCH' | 'UNKNOWN'

/** A reconcile hook's verdict on an effect a dead attempt left DISPATCHED. */
export type ReconcileResult = { done: true; result?: unknown } | { done: false } | 'unknown'

/** The consumer's reconcile hook (lib/a2/README.md §6): asked with the effect's idempotency key. */
export type ConsumerReconcile = (idempotencyKey: string, effect: { key: string; jobId: number }) => Promise<ReconcileResult>

export interface EffectOptions<R> {
  /**
   * Asked, with the effect's idempotency key (`a2-<job>-<key>`), when a dead attempt left this
   * effect DISPATCHED and a new attempt reaches it: did it happen? Absent: the consumer's own
   * `reconcile` is asked. Neither: the effect becomes UNKNOWN.
   */
  reconcile?: (idempotencyKey: string) => Promise<{ done: true; result: R } | { done: false } | 'unknown'>
  /**
   * The call may run twice at once under its idempotency key with no harm — a model call whose
   * output only its own attempt can write (a superseded attempt's writes are fenced). A run
   * inside such an effect is taken over as soon as its owner is judged gone (OWNER_DIED), and
   * reconcile's "not done" is trusted for it; inside any other effect the run waits for its
   * lease, since liveness can be wrong and the old call may still be running. Default false.
   */
  overlapSafe?: boolean
}

/** An app's reducer as the library folds it. */
export interface Fold<S> {
  /**
   * Names the fold and the meaning of its state, e.g. `chat@1`. Change it whenever the
   * reducer or the state's shape changes: checkpoints of another name are never read.
   */
  name: string
  initial: S
  /**
   * Pure; must not change `state`: a checkpoint's state is folded on by later readers, and the
   * state a fold returns may be shared with them (treat it as read-only).
   */
  fold: (events: A2Event[], state: S) => S
  /**
   * How a checkpoint of the state is written and read in pieces (absent: one JSON text).
   * The runtime pulls one piece, or pushes one, per turn of the event loop, so a large state
   * never holds the loop for its whole JSON: at 100k chat events (2.8 MiB) one
   * `JSON.parse` was 12–30 ms and one `JSON.stringify` ~18 ms, at 50k user messages (3.8 MiB)
   * 59–66 and ~28 ms. Pieces are stored in order and given back in that order. A fold reads
   * checkpoints of its own form only: adding, removing or changing a codec changes `name`
   * (a process still running the old code must not read the new form).
   */
  checkpoint?: CheckpointCodec<S>
}

/** A fold's state as ordered pieces of text, each a bounded slice of work to make or to read. */
export interface CheckpointCodec<S> {
  /** The state's pieces, each made when pulled (a piece the codec kept from an earlier state costs nothing). */
  encode: (state: S) => Iterable<string>
  /** A reader of one checkpoint: `push` each piece in order, then `end` for the state. */
  decoder: () => { add: (piece: string) => void; end: () => S }
  /**
   * A read of part of a checkpoint, for a fold asked for `{ partial: true }` (what one screen
   * of a long session needs): the library reads piece 0, the pieces `needs` names from it, and
   * the events since the checkpoint, and folds those onto `decode`'s state. A whole chat of
   * 50k user messages is 3.8 MiB of pieces; its newest screen is one or two of them.
   */
  partial?: PartialCheckpoint<S>
}

/** What a codec that writes a header as its piece 0 reads of a checkpoint when only part of the state is asked for. */
export interface PartialCheckpoint<S> {
  /** The numbers of the pieces besides piece 0 that a partial read needs, from piece 0's text. */
  needs: (head: string) => number[]
  /** The partial state from piece 0 and the pieces `needs` named, in their order. */
  decode: (head: string, pieces: string[]) => S
  /**
   * Whether `folded` (the `events` after the checkpoint folded onto `start`, what `decode`
   * made) is what the caller may use; false: the library reads the whole checkpoint instead
   * and folds the same events onto it.
   */
  accepts: (start: S, events: readonly A2Event[], folded: S) => boolean
}

export interface Folded<S> {
  state: S
  /** The index of the last event folded in: -1 for none. A tail continues after it. */
  lastSeenIndex: number
}

export interface JobRoute {
  consumer: string
  lane: string | null
  maxAttempts: number
}
export interface CancelRoute {
  consumer: string
  /** Absent: every earlier open job of the consumer is cancelled. */
  predicate?: (event: A2Event, trigger: A2Event) => boolean
}
/** Which consumers an event type starts, and which it cancels. Built by the server from its consumers. */
export interface Routing {
  jobsFor(type: string): readonly JobRoute[]
  cancelsFor(type: string): readonly CancelRoute[]
}

/** What one session may hold, checked under its row lock so concurrent pushes cannot overshoot. */
export interface SessionCaps {
  /** Events in the log (the server's too): an append past it is refused. */
  maxEvents: number
  /** Bytes of pushed payloads. */
  maxPushedBytes: number
}
