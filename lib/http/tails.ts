/**
 * Open SSE tails, counted per user and per process (finding 4: 150 tails on one session
 * were accepted). Each holds a connection, a bus subscription and a reader's memory; the
 * per-user cap leaves room for many tabs, the process cap protects everyone else.
 */
import { env } from '@/lib/env'
import { rateLimited } from './limits'

const globalTails = globalThis as unknown as { __a2Tails?: { total: number; byUser: Map<string, number> } }

function counts() {
  globalTails.__a2Tails ??= { total: 0, byUser: new Map() }
  return globalTails.__a2Tails
}

/** Takes a place for `userId`'s tail, or throws 429; the returned function gives it back (once). */
export function openTail(userId: string): () => void {
  const c = counts()
  const mine = c.byUser.get(userId) ?? 0
  // 5 s: about when a closed tab's connection is noticed and its place freed.
  if (mine >= env().A2_MAX_TAILS_PER_USER) throw rateLimited(`you have ${mine} live chats open: close a tab`, 5_000)
  if (c.total >= env().A2_MAX_TAILS_PER_PROCESS) throw rateLimited('the server is at its limit of live connections', 5_000)
  c.byUser.set(userId, mine + 1)
  c.total++
  let released = false
  return () => {
    if (released) return
    released = true
    const left = (c.byUser.get(userId) ?? 1) - 1
    if (left > 0) c.byUser.set(userId, left)
    else c.byUser.delete(userId)
    c.total--
  }
}
