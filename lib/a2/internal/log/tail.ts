/**
 * A live tail of one session: yields batches of events with `index > cursor`, in order,
 * woken by the bus and by a bounded poll (so a lost NOTIFY costs at most `pollMs`).
 * Because appends hold the session's row lock until commit, a later index can never
 * become visible before an earlier one, so reading `index > cursor` never skips.
 * Notifications arrive in commit order and carry the events they announce when those fit,
 * so an up-to-date tail takes them from there and reads the log only to catch up.
 */
import type { A2Event } from '../core/contract'
import { busFor } from './bus'
import { read } from './append'
import type { Store } from '../store/store'

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
  const limit = options.limit ?? 500
  const bus = await busFor(store)
  await bus.listenForTails()
  let cursor = options.after
  /** Events taken from hints, contiguous, not yet yielded (may start at or below cursor + 1 after a read). */
  let ready: A2Event[] = []
  // Set by a hint this tail cannot take the events of (none carried, or a gap), and when a
  // hint lands while a read is in flight, so it is never lost between the read and the wait.
  let dirty = true
  let wake: (() => void) | undefined
  const wakeUp = () => {
    wake?.()
    wake = undefined
  }
  const unsubscribe = bus.onSession(sessionId, (hint) => {
    const next = (ready.length > 0 ? ready[ready.length - 1].index : cursor) + 1
    if (hint.head <= next) return // nothing this tail has not got
    const carried = hint.events
    // Contiguous with what this tail has: take the events. Anything else (too big to carry,
    // a notification lost while the LISTEN connection was down) is read from the log.
    if (carried && carried.length > 0 && carried[0].index <= next && carried[carried.length - 1].index === hint.head - 1) {
      for (const event of carried) if (event.index >= next) ready.push(event)
    } else dirty = true
    // A reader that does not keep up holds at most a page here; past that it reads (paged).
    if (ready.length > limit) {
      ready = []
      dirty = true
    }
    wakeUp()
  })
  signal.addEventListener('abort', wakeUp)
  try {
    while (!signal.aborted) {
      // A read may have overtaken events taken from hints meanwhile.
      while (ready.length > 0 && ready[0].index <= cursor) ready.shift()
      if (ready.length > 0 && ready[0].index !== cursor + 1) {
        ready = []
        dirty = true
      }
      if (ready.length > 0) {
        const batch = ready
        ready = []
        cursor = batch[batch.length - 1].index
        yield batch
        continue
      }
      if (dirty) {
        dirty = false
        const batch = await read(store.db, sessionId, { after: cursor, limit })
        if (signal.aborted) return
        if (batch.length === limit) dirty = true // there may be more than one page
        if (batch.length > 0) {
          cursor = batch[batch.length - 1].index
          yield batch
        }
        continue
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          dirty = true
          resolve()
        }, options.pollMs ?? 30_000)
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
