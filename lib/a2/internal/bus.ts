/**
 * The process's wake-up bus: one LISTEN on the `a2` channel per store, fanned out to
 * SSE tails (by session) and workers (every hint). A notification is only a hint —
 * every subscriber also polls on a bounded interval, so a lost NOTIFY slows, never breaks.
 */
import type { Store } from './store'

export const CHANNEL = 'a2'

/** What one append transaction announces (kept short: NOTIFY payloads cap at 8000 bytes). */
export interface Hint {
  /** session id */
  s: string
  /** the session's head after the append (next index) */
  h: number
  /** new jobs were created */
  j?: 1
  /** jobs moved to CANCELLING: [jobId, cancelVersion, cancel event id, cancel event index] */
  c?: Array<[number, number, string, number]>
  /** More cancels than fit in `c`: workers recheck every running attempt's row. */
  C?: 1
}

/** 32 cancels × ~60 bytes stays far below NOTIFY's 8000-byte payload limit. */
export const MAX_CANCELS_PER_HINT = 32

type Listener = (hint: Hint) => void

export interface Bus {
  onSession(sessionId: string, listener: Listener): () => void
  onAny(listener: Listener): () => void
  /** Number of live subscriptions: tests use it to prove SSE clients leave nothing behind. */
  readonly size: number
  close(): Promise<void>
}

const buses = new WeakMap<Store, Promise<Bus>>()

export function busFor(store: Store): Promise<Bus> {
  let bus = buses.get(store)
  if (!bus) {
    bus = createBus(store)
    buses.set(store, bus)
  }
  return bus
}

async function createBus(store: Store): Promise<Bus> {
  const bySession = new Map<string, Set<Listener>>()
  const any = new Set<Listener>()
  const deliver = (listener: Listener, hint: Hint) => {
    try {
      listener(hint)
    } catch (error) {
      console.error('[a2] bus listener failed', error)
    }
  }
  const unlisten = await store.listen(CHANNEL, (raw) => {
    let hint: Hint
    try {
      hint = JSON.parse(raw) as Hint
    } catch {
      return
    }
    for (const listener of bySession.get(hint.s) ?? []) deliver(listener, hint)
    for (const listener of any) deliver(listener, hint)
  })
  return {
    onSession(sessionId, listener) {
      let set = bySession.get(sessionId)
      if (!set) bySession.set(sessionId, (set = new Set()))
      set.add(listener)
      return () => {
        set.delete(listener)
        if (set.size === 0) bySession.delete(sessionId)
      }
    },
    onAny(listener) {
      any.add(listener)
      return () => any.delete(listener)
    },
    get size() {
      let n = any.size
      for (const set of bySession.values()) n += set.size
      return n
    },
    close: () => unlisten(),
  }
}
