/**
 * `consumer({...}).run(fn)`: a named handler for some event types of a contract.
 */
import type { Contract, EventInput, EventOf, EventTypes } from '../core/contract'
import type { ConsumerReconcile, EffectOptions, Fold, Folded, ReconcileResult } from '../core/types'

export type AbortOn<C extends Contract, T extends EventTypes<C>> =
  ReadonlyArray<EventTypes<C>> | { [K in EventTypes<C>]?: (event: EventOf<C, K>, trigger: EventOf<C, T>) => boolean }

export interface ConsumerOptions<C extends Contract, T extends EventTypes<C>> {
  contract: C
  name: string
  types: readonly T[]
  abortOn?: AbortOn<C, T>
  /** Jobs of this consumer in one session and lane run one at a time, in log order. */
  lane?: string
  /** Attempts before the job fails (crashes and lease losses count). Default 3. */
  maxAttempts?: number
  /** How long an attempt holds its claim without renewal. Default 15 s; renewed every third of it. */
  leaseMs?: number
  /**
   * Did an effect that a dead attempt left DISPATCHED happen? Asked with the effect's
   * idempotency key (`a2-<job>-<key>`, the one its `fn` received) whenever the runtime must
   * settle it with no running code to ask: a drain after a Stop, a run ending with a dead
   * attempt's effect in flight, the last attempt's crash — and by `ctx.effect` when the effect
   * has no `reconcile` of its own. `{ done: false }` lets it be dispatched again under the
   * same key; `'unknown'` (or no hook, or a throw) leaves it UNKNOWN for an operator.
   */
  reconcile?: ConsumerReconcile
  /**
   * The run ended and its handler did not end it: it never started (a Stop before the claim),
   * it threw (out of attempts, or stopped while throwing), or the drain settled it after its
   * attempt died. Write here the terminal event the handler writes when it runs to its end,
   * with an id per job (`finished-<jobId>`, the handler's too): the hook may be asked again for
   * one run, and a second event with that id is one event (lib/a2/README.md §7).
   */
  onEnded?: (run: EndedRun<C, T>) => Promise<void>
}

/** What the `onEnded` hook is told about a run that ended without its handler ending it. */
export interface EndedRun<C extends Contract = Contract, T extends EventTypes<C> = EventTypes<C>> {
  readonly jobId: number
  readonly sessionId: string
  /** The attempt the run ended at (the drain's, when the drain settled it). */
  readonly attempt: number
  readonly trigger: EventOf<C, T>
  readonly status: 'COMPLETED' | 'CANCELLED' | 'FAILED'
  /** The last transition's reason: CANCELLED_BEFORE_START, ATTEMPTS_EXHAUSTED, DRAINED_AFTER_OWNER_LOST… */
  readonly reason: string
  /** Keys of the run's effects that were dispatched (their call may have been paid for), in key order. */
  readonly dispatched: readonly string[]
  /** Appends to the session, unfenced (the run is over). */
  append(...inputs: Array<EventInput<C>>): Promise<Array<EventOf<C>>>
  read(options?: { after?: number; before?: number; limit?: number }): Promise<Array<EventOf<C>>>
  /** The session folded up to the trigger, as the handler's ctx.fold. */
  fold<S>(reducer: Fold<S>, options?: { before?: number }): Promise<Folded<S>>
}

export type { ConsumerReconcile, ReconcileResult }

export interface RunContext<C extends Contract, T extends EventTypes<C>> {
  /** The event that triggered this job. */
  readonly event: EventOf<C, T>
  /** Fires on an abortOn event, a lost claim, or shutdown; the reason is a RunAborted. */
  readonly signal: AbortSignal
  /** 1 for the first attempt; the fencing token of every write this run makes. */
  readonly attempt: number
  readonly jobId: number
  readonly sessionId: string
  /** The session's log, from `after` (default: the start), up to `limit` events. */
  read(options?: { after?: number; before?: number; limit?: number }): Promise<Array<EventOf<C>>>
  /**
   * The session folded by `reducer` from its newest checkpoint, up to `before` — by default
   * the trigger's index: the history this run answers, at a cost independent of its length.
   */
  fold<S>(reducer: Fold<S>, options?: { before?: number }): Promise<Folded<S>>
  /** Appends events, fenced: rejected (A2Error 'fenced') once this attempt no longer holds the job. */
  append(...inputs: Array<EventInput<C>>): Promise<Array<EventOf<C>>>
  /**
   * The handler's own ending: the run's terminal events and its end in one transaction, under
   * the session's lock a Stop's append takes too, so the two are ordered and the events always
   * agree with the status (README §7): `completed` and COMPLETED while no cancel is recorded,
   * `cancelled` and CANCELLED once one is. A Stop after it is a late Stop and cancels nothing.
   * Writes nothing and resolves `UNSETTLED` while an effect of the run is still open (the run
   * ends UNKNOWN once the handler returns). Rejected 'fenced' once this attempt no longer holds
   * the run. No effect is dispatched after it.
   */
  end(terminal: { completed: Array<EventInput<C>>; cancelled: Array<EventInput<C>> }): Promise<EndOutcome>
  /**
   * Runs a side effect once under a stable key: intent recorded before dispatch; dispatched
   * only while the run is still ACTIVE at the cancel_version and attempt it observed; the
   * key reaches `fn` as an idempotency key; the result is recorded and replayed on retry.
   */
  effect<R>(key: string, fn: (idempotencyKey: string, signal: AbortSignal) => Promise<R>, options?: EffectOptions<R>): Promise<R>
}

/** How `ctx.end` ended the run (with which of its terminal events), or `UNSETTLED`: it did not. */
export type EndOutcome = 'COMPLETED' | 'CANCELLED' | 'UNSETTLED'

export type Handler<C extends Contract, T extends EventTypes<C>> = (ctx: RunContext<C, T>) => Promise<void>

export interface Consumer<C extends Contract = Contract, T extends EventTypes<C> = EventTypes<C>> {
  readonly options: ConsumerOptions<C, T>
  readonly handler: Handler<C, T>
}

/** Leases shorter than this renew more often than a database round trip can be trusted to take. */
export const MIN_LEASE_MS = 100

export function consumer<C extends Contract, T extends EventTypes<C>>(options: ConsumerOptions<C, T>) {
  validate(options as unknown as ConsumerOptions<Contract, string>)
  return {
    run(handler: Handler<C, T>): Consumer<C, T> {
      return { options, handler }
    },
  }
}

/**
 * Mistakes that would otherwise fail silently at run time: a type the contract does not
 * have never starts or cancels anything; `maxAttempts: 0` leaves a job that can never be
 * claimed nor failed; a lease below a round trip expires while it is being renewed.
 */
function validate(options: ConsumerOptions<Contract, string>): void {
  const name = options.name
  if (typeof name !== 'string' || name.length === 0) throw new Error('a consumer needs a name')
  if (options.types.length === 0) throw new Error(`consumer "${name}" handles no event types`)
  const known = new Set(options.contract.types)
  for (const type of options.types) {
    if (!known.has(type)) throw new Error(`consumer "${name}": "${type}" is not an event type of its contract`)
  }
  const abortOn = options.abortOn
  if (abortOn !== undefined) {
    const entries: Array<[string, unknown]> = Array.isArray(abortOn) ? abortOn.map((type) => [type, undefined]) : Object.entries(abortOn)
    for (const [type, predicate] of entries) {
      if (!known.has(type)) throw new Error(`consumer "${name}": abortOn "${type}" is not an event type of its contract`)
      if (predicate !== undefined && typeof predicate !== 'function') {
        throw new Error(`consumer "${name}": abortOn.${type} must be a predicate (event, trigger) => boolean`)
      }
    }
  }
  if (options.maxAttempts !== undefined && !(Number.isInteger(options.maxAttempts) && options.maxAttempts >= 1)) {
    throw new Error(`consumer "${name}": maxAttempts must be an integer ≥ 1`)
  }
  if (options.leaseMs !== undefined && !(Number.isFinite(options.leaseMs) && options.leaseMs >= MIN_LEASE_MS)) {
    throw new Error(`consumer "${name}": leaseMs must be at least ${MIN_LEASE_MS}`)
  }
}
