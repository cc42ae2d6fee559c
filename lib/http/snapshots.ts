/** Snapshots folding at once in this process, at most A2_MAX_SNAPSHOTS_IN_FLIGHT; the next one is a 429 with Retry-After. */
import { env } from '@/lib/env'
import { rateLimited } from './limits'

const globalFolds = globalThis as unknown as { __a2Folding?: number }

/** Takes a folding slot, or throws 429; the returned function gives it back (once). */
export function foldingSnapshot(): () => void {
  const folding = globalFolds.__a2Folding ?? 0
  if (folding >= env().A2_MAX_SNAPSHOTS_IN_FLIGHT) throw rateLimited('the server is opening many chats at once', 1_000)
  globalFolds.__a2Folding = folding + 1
  let released = false
  return () => {
    if (released) return
    released = true
    globalFolds.__a2Folding = (globalFolds.__a2Folding ?? 1) - 1
  }
}
