/**
 * The one polling loop the tests keep, for state that announces no change: another process's
 * record read over HTTP (the upstream stand-in's `/__requests`), a row in Postgres that no NOTIFY
 * marks, a port that opens, a process group that dies, a socket count. Where there is something
 * to wait on (a promise, an event, a NOTIFY, a DOM mutation, Playwright's auto-waiting), wait on
 * that instead; this is for when there is not.
 *
 * Dependency-free on purpose: vitest files, test/ helpers, Playwright specs and the chaos rig
 * all import it.
 */

/** Thrown from a check to stop the wait at once (a process died, a state that cannot change back) instead of polling on to the deadline. */
export class PollAbort extends Error {}

export interface PollOptions {
  /** The deadline: past it, pollUntil rejects saying what it waited for and what it saw last. */
  timeoutMs?: number
  /** Pause between checks. 50 ms: a few checks per token of the slowest stream the suites run (60 ms), cheap for the process polled. */
  everyMs?: number
}

/**
 * Calls `check` until it returns something other than undefined/false and resolves with that;
 * rejects with `what` after `timeoutMs` (a function is asked then, so it can tell what the
 * check saw last). A check that throws is retried (the state may not be
 * readable yet: a server still starting), unless it throws a PollAbort.
 */
export async function pollUntil<T>(
  what: string | (() => string),
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: PollOptions = {},
): Promise<T> {
  const { timeoutMs = 10_000, everyMs = 50 } = options
  const deadline = Date.now() + timeoutMs
  let lastError: unknown
  for (;;) {
    try {
      const value = await check()
      if (value !== undefined && value !== false) return value as T
      lastError = undefined
    } catch (error) {
      if (error instanceof PollAbort) throw error
      lastError = error
    }
    if (Date.now() > deadline) {
      const described = typeof what === 'function' ? what() : what
      const failed = lastError ? ` (last error: ${(lastError as Error).message})` : ''
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${described}${failed}`)
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}
