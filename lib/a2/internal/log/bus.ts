/**
 * The process's wake-up bus: one LISTEN connection per store, fanned out to SSE tails (by
 * session) and workers (every hint on the jobs channel). The tail channel is LISTENed only
 * once this process tails a session, so a worker process never receives a chunk's hint.
 * A notification is only a hint — every subscriber also polls on a bounded interval, so a
 * lost NOTIFY slows, never breaks. Payloads are coded in wire.ts (spec: PROTOCOL.md).
 */
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { decodeHints, encodeHint, JOBS_CHANNEL, packedPrefix, TAIL_CHANNEL, WireError, type Hint } from '../core/wire'
import { query, type Executor, type Store } from '../store/store'

export type { Hint } from '../core/wire'

/** Wakes every worker's claim loop (a job became claimable without an append: surrendered, released, resolved). */
export async function wakeWorkers(executor: Executor): Promise<void> {
  await executor.execute(sql`select pg_notify(${JOBS_CHANNEL}, ${encodeHint({ sessionId: '', head: 0, newJobs: true })})`)
}

type Listener = (hint: Hint) => void

export interface Bus {
  /**
   * Hints of one session, from both channels. Await `listenForTails()` first: a hint
   * committed before the tail channel's LISTEN took effect reaches only the polls.
   */
  onSession(sessionId: string, listener: Listener): () => void
  /** LISTENs on the tail channel (once per bus; later calls share the first). */
  listenForTails(): Promise<void>
  /** Every hint on the jobs channel (what workers need: new jobs, cancels). */
  onAny(listener: Listener): () => void
  /** Number of live subscriptions: tests use it to prove SSE clients leave nothing behind. */
  readonly size: number
  close(): Promise<void>
}

const buses = new WeakMap<Store, Promise<Bus>>()
/** The subscribers of each store's bus, for hints this process announces itself (deliverHere). */
const here = new WeakMap<Store, Subscribers>()
const origins = new WeakMap<Store, string>()

/**
 * Names a store object in the hints it packs (step-hints.ts), so its bus drops them when they
 * come back: its own tails had them in-process. Per store object, not per process: two stores
 * in one process (the tests' "other process") hear each other.
 */
export function originOf(store: Store): string {
  let origin = origins.get(store)
  if (!origin) origins.set(store, (origin = randomUUID()))
  return origin
}

/**
 * Hands hints of this store's committed chunk batches to the tails this process runs, without a
 * round trip through Postgres. Nothing happens when the process tails nothing (no bus yet).
 */
export function deliverHere(store: Store, hints: readonly Hint[]): void {
  const subscribers = here.get(store)
  if (subscribers) for (const hint of hints) subscribers.fanOut(hint, false)
}

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

/**
 * Who listens to what in this process: tails by session, workers to everything on the jobs
 * channel, and the highest head each tailed session was last seen at (from a hint or the poll).
 */
class Subscribers {
  readonly bySession = new Map<string, Set<Listener>>()
  readonly any = new Set<Listener>()
  private readonly heads = new Map<string, number>()

  constructor(private readonly changed: () => void) {}

  onSession(sessionId: string, listener: Listener): () => void {
    let set = this.bySession.get(sessionId)
    if (!set) this.bySession.set(sessionId, (set = new Set()))
    set.add(listener)
    this.changed()
    return () => {
      set.delete(listener)
      if (set.size === 0) {
        this.bySession.delete(sessionId)
        this.heads.delete(sessionId)
        this.changed()
      }
    }
  }

  onAny(listener: Listener): () => void {
    this.any.add(listener)
    return () => this.any.delete(listener)
  }

  get size(): number {
    let n = this.any.size
    for (const set of this.bySession.values()) n += set.size
    return n
  }

  /** Whether `head` is past what the session's tails were last told. */
  moved(sessionId: string, head: number): boolean {
    return head > (this.heads.get(sessionId) ?? -1)
  }

  fanOut(hint: Hint, toWorkers: boolean): void {
    if (this.bySession.has(hint.sessionId)) this.heads.set(hint.sessionId, Math.max(hint.head, this.heads.get(hint.sessionId) ?? -1))
    for (const listener of this.bySession.get(hint.sessionId) ?? []) deliver(listener, hint)
    if (toWorkers) for (const listener of this.any) deliver(listener, hint)
  }
}

function deliver(listener: Listener, hint: Hint): void {
  try {
    listener(hint)
  } catch (error) {
    console.error('[a2] bus listener failed', error)
  }
}

async function createBus(store: Store): Promise<Bus> {
  const subscribers = new Subscribers(() => updatePoll())
  here.set(store, subscribers)
  const ownPackets = packedPrefix(originOf(store))
  let polling = false
  const pollHeads = async () => {
    if (polling || subscribers.bySession.size === 0) return
    polling = true
    try {
      const ids = [...subscribers.bySession.keys()]
      // One statement shape whatever the number of tails (statements are prepared per shape).
      const rows = await query<{ id: string; head: number }>(
        store.db,
        sql`select id, head from a2_sessions where id in (select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`,
      )
      for (const { id, head } of rows) {
        if (subscribers.moved(id, head)) subscribers.fanOut({ sessionId: id, head }, false)
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
    const tails = subscribers.bySession.size
    if (tails > 0 && !poll) poll = setInterval(pollHeads, BUS_POLL_MS)
    else if (tails === 0 && poll) {
      clearInterval(poll)
      poll = undefined
    }
  }
  // Events are decoded once per notification, for the sessions this process tails only;
  // every tail of the session shares them.
  const tailed = (sessionId: string) => subscribers.bySession.has(sessionId)
  const onPayload = (toWorkers: boolean) => (raw: string) => {
    if (raw.startsWith(ownPackets)) return // this store's own chunk hints: delivered here already
    let hints: Hint[]
    try {
      hints = decodeHints(raw, tailed)
    } catch (error) {
      // Anyone who can reach the database can NOTIFY: a payload that is not a hint is dropped, loudly.
      console.error('[a2] bus: dropped a notification that is not a hint:', error instanceof WireError ? error.message : error)
      return
    }
    for (const hint of hints) subscribers.fanOut(hint, toWorkers)
  }
  // A lost LISTEN connection, taken again: what was notified meanwhile reached nobody here (a
  // Stop's cancel hint, a new job). Workers look again at once — a running attempt rechecks
  // its run (a Stop would otherwise wait for its next lease renewal, 5 s for the chat), the
  // claim loop claims — and tails read their sessions' heads.
  const relistened = () => {
    for (const listener of subscribers.any) deliver(listener, { sessionId: '', head: 0, newJobs: true, recheckCancels: true })
    void pollHeads()
  }
  const unlistenJobs = await store.listen(JOBS_CHANNEL, onPayload(true), relistened)
  let tailChannel: Promise<() => Promise<void>> | undefined
  return {
    listenForTails() {
      tailChannel ??= store
        .listen(TAIL_CHANNEL, onPayload(false), () => void pollHeads())
        .catch((error: unknown) => {
          tailChannel = undefined // the next tail tries again
          throw error
        })
      return tailChannel.then(() => undefined)
    },
    onSession: (sessionId, listener) => subscribers.onSession(sessionId, listener),
    onAny: (listener) => subscribers.onAny(listener),
    get size() {
      return subscribers.size
    },
    close: async () => {
      if (here.get(store) === subscribers) here.delete(store)
      clearInterval(poll)
      poll = undefined
      await Promise.all([
        unlistenJobs(),
        tailChannel?.then(
          (unlisten) => unlisten(),
          () => {},
        ),
      ])
    },
  }
}
