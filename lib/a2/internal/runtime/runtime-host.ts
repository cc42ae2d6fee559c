/**
 * What the runtime's three roles — the claim loop (worker.ts), one attempt (attempt.ts) and
 * the drain (drain.ts) — need from the server that started them. Types only: the roles
 * import this, never each other's internals.
 */
import type { A2Event, Contract } from '../core/contract'
import type { Consumer } from './consumer'
import type { Fence } from '../core/types'
import type { Executor, Store } from '../store/store'

/** Race-suite seams: each runs at one boundary of an attempt, so a test can hold it there. */
export interface WorkerHooks {
  /** After an effect's state was read, before its dispatch compare-and-set. */
  beforeDispatch?: (job: { jobId: number; attempt: number }, key: string) => Promise<void>
  /** After the claim committed, before the start boundary's check and the handler; with it, that check reads the job again (attempt.ts). */
  afterClaim?: (job: { jobId: number; attempt: number; sessionId: string; eventId: string }) => Promise<void>
}

/** The store, the consumers and a fenced server-side append. */
export interface RuntimeHost {
  store: Store
  contract: Contract
  consumers: ReadonlyMap<string, Consumer>
  append(
    sessionId: string,
    inputs: Array<{ id?: string; type: string; payload: unknown }>,
    options: { fence?: Fence; within?: (tx: Executor) => Promise<void> },
  ): Promise<{ events: A2Event[]; duplicate: boolean }>
}

export const DEFAULT_LEASE_MS = 15_000
export const DEFAULT_MAX_ATTEMPTS = 3

export function leaseMsOf(consumer: Consumer): number {
  return consumer.options.leaseMs ?? DEFAULT_LEASE_MS
}
