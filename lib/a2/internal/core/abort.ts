/**
 * Why a run's signal fired. `ctx.signal.reason` is always a RunAborted, so a consumer can
 * tell a user's stop (return normally: the stop is the outcome) from a lost claim
 * (let it propagate: the attempt is surrendered and a successor takes over).
 */
import { brandOf, hasBrand, mark } from './brand'
import { isA2Error } from './errors'

export type AbortCode =
  /** an abortOn event was appended: the user stopped this run */
  | 'CANCELLED'
  /** no successful lease renewal before the deadline, decided locally */
  | 'CLAIM_EXPIRED'
  /** another attempt holds the job */
  | 'SUPERSEDED_ATTEMPT'
  /** the run ignored its cancel past the grace period and was fenced out */
  | 'FENCED_OUT'
  /** the worker is shutting down; the attempt is surrendered */
  | 'SHUTDOWN'

export interface EventRef {
  id: string
  index: number
}

export class RunAborted extends Error {
  static readonly brand: symbol = brandOf('RunAborted')
  static [Symbol.hasInstance](value: unknown): boolean {
    return hasBrand(value, RunAborted.brand)
  }

  readonly code: AbortCode
  /** The cancelling event, for CANCELLED. */
  readonly event?: EventRef

  constructor(code: AbortCode, event?: EventRef) {
    super(code === 'CANCELLED' ? `cancelled by event ${event?.id}` : code)
    this.name = 'RunAborted'
    this.code = code
    // Only { id, index }, whichever path reported it (a NOTIFY hint or the durable cancelled_by).
    this.event = event ? { id: event.id, index: event.index } : undefined
    mark(this, RunAborted.brand)
  }

  /** A user's cancel, as opposed to a lost claim. */
  get isCancel(): boolean {
    return this.code === 'CANCELLED'
  }

  /** The claim is gone or going: surrender, a successor takes over. */
  get isLeaseLoss(): boolean {
    return this.code === 'CLAIM_EXPIRED' || this.code === 'SUPERSEDED_ATTEMPT' || this.code === 'SHUTDOWN'
  }
}

/** The typed reason of an aborted run signal, or undefined while it has not fired. */
export function abortReason(signal: AbortSignal): RunAborted | undefined {
  return signal.aborted && signal.reason instanceof RunAborted ? signal.reason : undefined
}

/**
 * Did this run end because the user stopped it? True when its signal fired for an `abortOn`
 * event, or when `error` is the runtime refusing work of a stopped run (an effect not
 * dispatched, a step refused at admission): return normally then — the stop is the outcome.
 */
export function isStop(signal: AbortSignal, error?: unknown): boolean {
  return abortReason(signal)?.isCancel === true || isA2Error(error, 'run_cancelled')
}
