/**
 * A store outage is not a failure of the work. When Postgres restarts (a minor upgrade, a
 * failover, a maintenance window) every connection drops for a moment; a statement sent then
 * fails with a connection error, not because of what it said. The writes an attempt makes are
 * fenced on (job, attempt) and idempotent (an event carries its id, an ending is a
 * compare-and-set), so they are sent again until the store answers or the lease is really
 * lost: the attempt keeps its place, and no attempt of the budget is spent on the outage.
 */

/** postgres.js's own codes for a connection that is gone, and the OS's for one that cannot be made. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECTION_ENDED',
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
])

/**
 * SQLSTATEs of a server going away or not yet back: 57P01 admin_shutdown (a fast or
 * immediate stop, pg_terminate_backend), 57P02 crash_shutdown, 57P03 cannot_connect_now
 * (starting up, shutting down), and class 08, connection exception.
 */
const UNREACHABLE_STATES = /^(57P0[123]|08...)$/

/** Whether `error` (or a cause up to three levels down: drizzle wraps the driver's error) says the store could not be reached. */
export function isStoreUnreachable(error: unknown): boolean {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (typeof e !== 'object') return false
    const code = e.code
    if (typeof code === 'string' && (CONNECTION_CODES.has(code) || UNREACHABLE_STATES.test(code))) return true
  }
  return false
}

/**
 * Waits between tries: 50 ms doubling to 250 ms. The cap is what bounds the time from the
 * store answering again to the write landing (the bench's figure 10 target is 1 s), and at
 * four tries a second per attempt a restart costs the store nothing it would notice.
 */
export const OUTAGE_BACKOFF_MS = [50, 100, 200, 250] as const

export interface OutageRetry {
  /** Stop trying (the lease is lost, the worker is stopping): the last error is thrown. */
  giveUp?: () => boolean
  /** Stop trying at this `performance.now()` (the lease's end, for work done after the handler). */
  until?: number
  /** Called once, on the first failure the outage causes (a log line). */
  onOutage?: (error: unknown) => void
}

/**
 * Runs `write` until it does not fail for an outage. Only for writes that may be sent twice:
 * a write whose answer was lost may have landed, and the second one must find that out.
 */
export async function throughOutage<T>(write: (tries: number) => Promise<T>, options: OutageRetry = {}): Promise<T> {
  for (let tries = 0; ; tries++) {
    try {
      return await write(tries)
    } catch (error) {
      if (!isStoreUnreachable(error) || options.giveUp?.()) throw error
      if (tries === 0) options.onOutage?.(error)
      const wait = OUTAGE_BACKOFF_MS[Math.min(tries, OUTAGE_BACKOFF_MS.length - 1)]
      if (options.until !== undefined && performance.now() + wait > options.until) throw error
      await new Promise((resolve) => setTimeout(resolve, wait))
      if (options.giveUp?.()) throw error
    }
  }
}
