/**
 * The process's wake-up bus: one LISTEN on the `a2` channel per store, fanned out to
 * SSE tails (by session) and workers (every hint). A notification is only a hint —
 * every subscriber also polls on a bounded interval, so a lost NOTIFY slows, never breaks.
 */
import { sql } from 'drizzle-orm'
import type { A2Event } from './contract'
import { query, type Executor, type Store } from './store'

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
  /**
   * The appended events, when the whole payload fits in NOTIFY's 8000 bytes (a2_notify,
   * migration 0002): a tail that is up to date takes them from here instead of reading.
   */
  e?: HintEvent[]
}

/** An event as a hint carries it: index, id, type, payload, created_at. */
export interface HintEvent {
  i: number
  d: string
  t: string
  p: unknown
  c: string
}

export function toHintEvent(event: A2Event): HintEvent {
  return { i: event.index, d: event.id, t: event.type, p: event.payload, c: event.createdAt }
}

export function fromHintEvent(sessionId: string, event: HintEvent): A2Event {
  return { id: event.d, sessionId, index: event.i, type: event.t, payload: event.p, createdAt: new Date(event.c).toISOString() }
}

/** Wakes every worker's claim loop (a job became claimable without an append: surrendered, released, resolved). */
export async function wakeWorkers(executor: Executor): Promise<void> {
  const hint: Hint = { s: '', h: 0, j: 1 }
  await executor.execute(sql`select pg_notify(${CHANNEL}, ${JSON.stringify(hint)})`)
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

/**
 * One fallback poll per process, not per tail: every 2 s, one statement reads the heads of
 * the sessions this process tails and wakes those that moved without a NOTIFY. (A 2 s poll
 * per tail cost ~500 statements/s and ~19% of a core at 1,000 idle tails — bench figure 5.)
 */
export const BUS_POLL_MS = 2_000

async function createBus(store: Store): Promise<Bus> {
  const bySession = new Map<string, Set<Listener>>()
  const any = new Set<Listener>()
  /** The highest head each tailed session was last seen at (from a hint or the poll). */
  const heads = new Map<string, number>()
  let polling = false
  const pollHeads = async () => {
    if (polling || bySession.size === 0) return
    polling = true
    try {
      const ids = [...bySession.keys()]
      // One statement shape whatever the number of tails (statements are prepared per shape).
      const rows = await query<{ id: string; head: number }>(
        store.db,
        sql`select id, head from a2_sessions where id in (select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`,
      )
      for (const { id, head } of rows) {
        if (head > (heads.get(id) ?? -1)) fanOut({ s: id, h: head })
      }
    } catch {
      // The store is unreachable: the next tick tries again.
    } finally {
      polling = false
    }
  }
  // Runs only while this process tails some session: no timer is left behind by an idle bus.
  let poll: ReturnType<typeof setInterval> | undefined
  const updatePoll = () => {
    if (bySession.size > 0 && !poll) poll = setInterval(pollHeads, BUS_POLL_MS)
    else if (bySession.size === 0 && poll) {
      clearInterval(poll)
      poll = undefined
    }
  }
  const deliver = (listener: Listener, hint: Hint) => {
    try {
      listener(hint)
    } catch (error) {
      console.error('[a2] bus listener failed', error)
    }
  }
  function fanOut(hint: Hint) {
    if (bySession.has(hint.s)) heads.set(hint.s, Math.max(hint.h, heads.get(hint.s) ?? -1))
    for (const listener of bySession.get(hint.s) ?? []) deliver(listener, hint)
    for (const listener of any) deliver(listener, hint)
  }
  const unlisten = await store.listen(CHANNEL, (raw) => {
    try {
      fanOut(JSON.parse(raw) as Hint)
    } catch {
      // not a hint
    }
  })
  return {
    onSession(sessionId, listener) {
      let set = bySession.get(sessionId)
      if (!set) bySession.set(sessionId, (set = new Set()))
      set.add(listener)
      updatePoll()
      return () => {
        set.delete(listener)
        if (set.size === 0) {
          bySession.delete(sessionId)
          heads.delete(sessionId)
          updatePoll()
        }
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
    close: () => {
      clearInterval(poll)
      poll = undefined
      return unlisten()
    },
  }
}
