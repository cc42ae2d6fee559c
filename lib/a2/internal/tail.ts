/**
 * A live tail of one session: yields batches of events with `index > cursor`, in order,
 * woken by the bus and by a bounded poll (so a lost NOTIFY costs at most `pollMs`).
 * Because appends hold the session's row lock until commit, a later index can never
 * become visible before an earlier one, so reading `index > cursor` never skips.
 */
import type { A2Event } from './contract'
import { busFor } from './bus'
import { read } from './log'
import type { Store } from './store'

export interface TailOptions {
  after: number
  signal: AbortSignal
  /**
   * This tail's own fallback poll. The bus already polls every tailed session's head once
   * per process every 2 s, so this is only a last resort. Default 30 s.
   */
  pollMs?: number
  /** Largest batch per read. */
  limit?: number
}

export async function* tail(store: Store, sessionId: string, options: TailOptions): AsyncGenerator<A2Event[]> {
  const { signal } = options
  const bus = await busFor(store)
  let cursor = options.after
  // Set by a hint that lands while a read is in flight, so it is never lost between
  // the read and the wait.
  let dirty = false
  let wake: (() => void) | undefined
  const wakeUp = () => {
    wake?.()
    wake = undefined
  }
  const unsubscribe = bus.onSession(sessionId, (hint) => {
    if (hint.h - 1 > cursor) {
      dirty = true
      wakeUp()
    }
  })
  signal.addEventListener('abort', wakeUp)
  try {
    while (!signal.aborted) {
      dirty = false
      const batch = await read(store.db, sessionId, { after: cursor, limit: options.limit ?? 500 })
      if (signal.aborted) return
      if (batch.length > 0) {
        cursor = batch[batch.length - 1].index
        yield batch
        continue // there may be more than one page
      }
      if (dirty) continue
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, options.pollMs ?? 30_000)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
        if (signal.aborted) wake()
      })
    }
  } finally {
    unsubscribe()
    signal.removeEventListener('abort', wakeUp)
    wake = undefined
  }
}
