/**
 * A plain, framework-free store for one session in the browser: the SSE tail (resuming
 * with Last-Event-ID, reconnecting with backoff), optimistic pushes with client event
 * ids (retried safely: the id makes a repeat a no-op), the confirmed `events` feed, the
 * last index it has seen, and the app's fold over all of it. Every frame and answer is
 * decoded by wire.ts (PROTOCOL.md). React binds to it with
 * useSyncExternalStore; tests drive it without React.
 *
 * Durable pushes (the types in `durableTypes`, e.g. a Stop) are intents, not requests: they
 * go into an outbox kept in localStorage (outbox.ts), stay folded into the view, and are
 * retried until the server acknowledges them — across a reload, however long the server is
 * away, and when their tab is closed: every tab of the session holds and sends them. Each
 * send asks the browser to finish it after the page is gone (`keepalive`). Only the app's
 * acknowledgement of its id, or the app's own final refusal (a 4xx other than 408/429 with
 * its error body; `invalid_reference` only after UNSEEN_REFERENCE_HOLD_MS), ends one.
 */
import type { A2Event } from '../core/contract'
import { A2HttpError } from '../core/http-error'
import { createDurableDelivery, type DurableDelivery } from './durable-delivery'
import {
  claimOutbox,
  createOutbox,
  defaultOutboxStorage,
  eventsUrlOf,
  isAcknowledged,
  outboxKeyOf,
  UNSEEN_REFERENCE_HOLD_MS,
  type OutboxEntry,
  type OutboxStorage,
} from './outbox'
import { OrderedQueue } from './ordered-queue'
import { postPush, PushError } from './post-push'
import { createTailSource, type Connection, type TailSource } from './tail-source'
import { WakeableSleeps } from './wakeable-sleep'
import type { PushedEvent } from '../core/wire'

export type { OutboxEntry, OutboxStorage } from './outbox'
export { PushError } from './post-push'
export type { Connection } from './tail-source'

export type PushInput = PushedEvent

export interface SessionSnapshot<S> {
  /** The fold of confirmed events, then this browser's pending pushes on top. */
  state: S
  /** Confirmed events, in index order. */
  events: A2Event[]
  /**
   * The highest index this browser has received (-1: none): the `lastSeenIndex` a Stop
   * reports, and the cursor the tail resumes after.
   */
  lastSeenIndex: number
  pending: A2Event[]
  connection: Connection
  error?: PushError
  /** False until the snapshot (if any) is in. */
  loaded: boolean
  /** Durable pushes the server has not acknowledged yet (also in `pending`), with how many sends failed. */
  outbox: OutboxEntry[]
}

export interface SessionStoreOptions<S> {
  sessionId: string
  reducer: (state: S, event: A2Event) => S
  initial: S
  /** Base of the routes: `${base}/sessions/${id}/events`. Default `/api`. */
  base?: string
  fetch?: typeof fetch
  EventSource?: typeof EventSource
  /** Where the tail starts (events up to it are already folded into `initial`). Default -1. */
  after?: number
  /** Events to seed the feed with (e.g. from a snapshot). */
  events?: A2Event[]
  /**
   * Push retry delays on network errors, 5xx, 408 and 429; other 4xx are final. An ordinary
   * push gives up after the last one (and is rolled back); a durable push keeps retrying at
   * the last delay, and at once when the tail reconnects or the browser comes back online.
   */
  retryDelaysMs?: number[]
  /** Event types pushed as durable intents: kept in the outbox until acknowledged, never rolled back. */
  durableTypes?: string[]
  /** Where the outbox outlives the page. Default: the origin's localStorage, shared by its tabs (none outside a browser). */
  storage?: OutboxStorage | null
  /**
   * Loads a server-side fold before the tail opens, so a long session (100k events) costs
   * one small state instead of replaying its whole log into the browser. A refusal (an
   * A2HttpError with a 4xx status) is final; anything else is retried with backoff.
   */
  snapshot?: () => Promise<{ state: S; lastSeenIndex: number }>
}

export interface SessionStore<S> {
  getSnapshot(): SessionSnapshot<S>
  /**
   * The store as it was made, before this browser's outbox and tail: what a server renders,
   * and what React hydrates that markup against (useSyncExternalStore's third argument). A
   * reloaded page's pending Stop then shows in the render right after hydration, not as a
   * mismatch that throws the server's markup away.
   */
  getServerSnapshot(): SessionSnapshot<S>
  subscribe(listener: () => void): () => void
  /** Appends optimistically and pushes; resolves with the confirmed events, rejects with a PushError. */
  push(inputs: PushInput | PushInput[]): Promise<A2Event[]>
  /** Feeds confirmed events (from the tail or a push answer); duplicates and replays are ignored. */
  receive(events: A2Event[]): void
  /**
   * Changes the confirmed state by `change` (pure), with no event: what the app folds in beside
   * the log, such as older turns a page of its history brings. Pending pushes stay on top.
   */
  amend(change: (state: S) => S): void
  connect(): void
  close(): void
  clearError(): void
}

/** Client event ids: 22 url-safe characters of randomness, accepted by the push route's id rule. */
export function clientEventId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  return (
    'c' +
    btoa(String.fromCharCode(...bytes))
      .replaceAll('+', '-')
      .replaceAll('/', '_')
      .replaceAll('=', '')
  )
}

/**
 * A durable push (a Stop) is re-sent every second while it waits: a restarted server holds
 * the runs it resumes for 3 s (WorkerOptions.resumeAfterMs), and the Stop must land first.
 * One small POST a second per pending Stop costs nothing while the server is down.
 */
const DURABLE_RETRY_MS = [250, 500, 1_000]

/** What a session store holds and changes: the fold of the confirmed log, and this browser's view on top of it. */
interface StoreState<S> {
  confirmedState: S
  events: A2Event[]
  lastSeenIndex: number
  pending: A2Event[]
  confirmedIds: Set<string>
  connection: Connection
  error: PushError | undefined
  snapshot: SessionSnapshot<S> | undefined
  closed: boolean
  /** While connected this store delivers its session's outbox; closed, the page's courier does (outbox-courier.ts). */
  releaseOutbox: (() => void) | undefined
  loaded: boolean
  loading: Promise<void> | undefined
  /** The tail's opening, a task after connect() (see there). */
  tailOpening: ReturnType<typeof setTimeout> | undefined
}

/** The parts of one store that its methods share: its state, its deliveries and its tail. */
interface StoreParts<S> {
  options: SessionStoreOptions<S>
  s: StoreState<S>
  emit(): void
  outbox: ReturnType<typeof createOutbox>
  outboxKey: string
  queue: OrderedQueue
  sleeps: WakeableSleeps
  tail: TailSource
  durable: DurableDelivery
  durableTypes: Set<string>
  /** An ordinary push: a few retries (same body, same ids: a repeat is one event), then it fails. */
  send(inputs: PushInput[]): Promise<A2Event[]>
  /** Ordinary pushes not settled yet (each as its place in the queue): what a close waits for before the courier takes the outbox. */
  ordinaryInFlight: Set<Promise<void>>
  acknowledge(confirmed: A2Event[]): void
  onOnline(): void
  onStorage(change: StorageEvent): void
}

export function createSessionStore<S>(options: SessionStoreOptions<S>): SessionStore<S> {
  const base = options.base ?? '/api'
  const url = eventsUrlOf(options.sessionId, base)
  const doFetch = options.fetch ?? ((...args: Parameters<typeof fetch>) => fetch(...args))
  const retryDelays = options.retryDelaysMs ?? [250, 1000, 3000]
  const outboxKey = outboxKeyOf(options.sessionId, base)
  const outbox = createOutbox(outboxKey, options.storage === null ? undefined : (options.storage ?? defaultOutboxStorage()), (events) =>
    adopt(parts, events),
  )
  const listeners = new Set<() => void>()
  const events: A2Event[] = [...(options.events ?? [])]
  // An intent acknowledged before the fold this page starts from is in it.
  outbox.letGo(options.after ?? -1)
  const s: StoreState<S> = {
    confirmedState: options.initial,
    events,
    lastSeenIndex: options.after ?? -1,
    // A reloaded page shows at once the intents its first fold lacks: the view stays cut.
    pending: outbox.entries().map((e) => e.event),
    confirmedIds: new Set(events.map((e) => e.id)),
    connection: 'closed',
    error: undefined,
    snapshot: undefined,
    closed: false,
    releaseOutbox: undefined,
    loaded: !options.snapshot,
    loading: undefined,
    tailOpening: undefined,
  }
  const queue = new OrderedQueue()
  const sleeps = new WakeableSleeps()
  const emit = () => {
    s.snapshot = undefined
    for (const listener of listeners) listener()
  }
  const tail = createTailSource({
    url,
    EventSource: options.EventSource,
    after: () => s.lastSeenIndex,
    onEvent: (event) => receive(parts, [event]),
    connection: {
      get: () => s.connection,
      set: (next) => {
        s.connection = next
        emit()
      },
    },
    onOpen: () => sleeps.wakeAll(), // the server is back: an intent waiting in the outbox goes now, not at its next retry
  })
  const postOnce = (inputs: PushInput[], durable = false) => postPush(doFetch, url, inputs, { keepalive: durable })
  const durable = createDurableDelivery({
    outbox,
    queue,
    sleeps,
    delaysMs: options.retryDelaysMs ?? DURABLE_RETRY_MS,
    post: (event) => postOnce([{ id: event.id, type: event.type, payload: event.payload }], true),
    isClosed: () => s.closed,
    acknowledged: (confirmed) => acknowledge(parts, confirmed),
    refused: (event, refusal) => {
      s.pending = s.pending.filter((p) => p.id !== event.id)
      s.error = refusal
      emit()
    },
    failed: emit,
  })
  const parts: StoreParts<S> = {
    options,
    s,
    emit,
    outbox,
    outboxKey,
    queue,
    sleeps,
    tail,
    durable,
    durableTypes: new Set(options.durableTypes ?? []),
    send: async (inputs) => {
      for (let attempt = 0; ; attempt++) {
        const outcome = await postOnce(inputs)
        if (outcome.kind === 'ok') return outcome.events
        if (outcome.kind === 'final' || attempt >= retryDelays.length) throw outcome.error
        await sleeps.sleep(retryDelays[attempt])
      }
    },
    ordinaryInFlight: new Set(),
    acknowledge: (confirmed) => acknowledge(parts, confirmed),
    onOnline: () => sleeps.wakeAll(),
    /** Another tab changed this session's outbox (the browser's `storage` event). */
    onStorage: (change) => {
      if (change.key === outboxKey || change.key === null) outbox.sync()
    },
  }

  return storeApi(parts, listeners)
}

/** The store's face to its hook and to tests: snapshots, subscriptions, pushes and the tail's lifecycle. */
function storeApi<S>(parts: StoreParts<S>, listeners: Set<() => void>): SessionStore<S> {
  const { s, options, outbox, emit } = parts
  const serverSnapshot: SessionSnapshot<S> = {
    state: options.initial,
    events: [...(options.events ?? [])],
    lastSeenIndex: options.after ?? -1,
    pending: [],
    connection: 'closed',
    loaded: !options.snapshot,
    outbox: [],
  }
  return {
    getSnapshot() {
      s.snapshot ??= sameAsServer(
        {
          state: s.pending.reduce(options.reducer, s.confirmedState),
          events: s.events,
          lastSeenIndex: s.lastSeenIndex,
          pending: s.pending,
          connection: s.connection,
          error: s.error,
          loaded: s.loaded,
          outbox: outbox.entries().filter((e) => !isAcknowledged(e)),
        },
        serverSnapshot,
      )
      return s.snapshot
    },
    getServerSnapshot: () => serverSnapshot,
    subscribe(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    push: (input) => push(parts, input),
    receive: (incoming) => receive(parts, incoming),
    amend(change) {
      const next = change(s.confirmedState)
      if (next === s.confirmedState) return
      s.confirmedState = next
      emit()
    },
    connect: () => connect(parts),
    close: () => close(parts),
    clearError() {
      s.error = undefined
      emit()
    },
  }
}

/** Confirmed events (from the tail or a push answer): folded in order; duplicates and replays are ignored. */
function receive<S>({ s, options, tail, durable, outbox, emit }: StoreParts<S>, incoming: A2Event[]): void {
  let changed = false
  for (const event of incoming) {
    // Duplicate delivery (a push answer and the tail, or a replay after reconnect) is a no-op.
    if (event.index <= s.lastSeenIndex) continue
    if (event.index !== s.lastSeenIndex + 1) {
      // A gap should be impossible (the log is gapless and the tail ordered); resync from lastSeenIndex.
      tail.resubscribe()
      break
    }
    s.lastSeenIndex = event.index
    s.events.push(event)
    s.confirmedIds.add(event.id)
    s.confirmedState = options.reducer(s.confirmedState, event)
    if (durable.awaits(event.id) || outbox.entries().some((e) => e.event.id === event.id)) {
      // The tail brought an intent whose answer was lost, or that another tab delivered: it is
      // in the log, so it is acknowledged.
      outbox.acknowledged(event)
      durable.landed(event.id, [event])
    }
    changed = true
  }
  if (changed) {
    s.pending = s.pending.filter((p) => !s.confirmedIds.has(p.id))
    emit()
  }
}

/** The server answered a push with its events: fold them, and stop showing what the fold now holds. */
function acknowledge<S>(parts: StoreParts<S>, confirmed: A2Event[]): void {
  const { s, outbox, emit } = parts
  for (const event of confirmed) outbox.acknowledged(event)
  // Fold the answer now only if it continues the feed; otherwise the tail brings it in order.
  if (confirmed[0]?.index === s.lastSeenIndex + 1) receive(parts, confirmed)
  // A repeat is answered with the original events, which the feed (or the snapshot) may already hold.
  const folded = new Set(confirmed.filter((e) => e.index <= s.lastSeenIndex).map((e) => e.id))
  s.pending = s.pending.filter((p) => !folded.has(p.id))
  emit()
}

/** Another tab's intents, found in the shared list: this page shows those its fold lacks, and sends those not yet acknowledged. */
function adopt<S>({ s, emit, durable }: StoreParts<S>, stored: A2Event[]): void {
  const added = stored.filter(
    (event) => !s.confirmedIds.has(event.id) && !s.pending.some((p) => p.id === event.id) && !(event.index >= 0 && event.index <= s.lastSeenIndex),
  )
  if (added.length === 0) return
  s.pending = [...s.pending, ...added]
  emit()
  if (!s.closed) for (const event of added) durable.deliver(event.id)
}

/** Appends optimistically and pushes: a durable type as an intent (never rolled back), anything else as an ordinary push. */
async function push<S>(parts: StoreParts<S>, input: PushInput | PushInput[]): Promise<A2Event[]> {
  const { s, emit } = parts
  const inputs = (Array.isArray(input) ? input : [input]).map((i) => ({ ...i, id: i.id ?? clientEventId() }))
  const optimistic = inputs.map<A2Event>((i) => ({
    id: i.id,
    sessionId: parts.options.sessionId,
    index: -1,
    type: i.type,
    payload: i.payload,
    createdAt: new Date().toISOString(),
  }))
  s.pending = [...s.pending, ...optimistic]
  s.error = undefined
  if (inputs.every((i) => parts.durableTypes.has(i.type))) {
    const acknowledged = parts.durable.push(optimistic)
    emit()
    return acknowledged
  }
  emit()
  try {
    const sending = parts.queue.run(() => parts.send(inputs))
    const settled = sending.then(
      () => undefined,
      () => undefined,
    )
    parts.ordinaryInFlight.add(settled)
    void settled.then(() => parts.ordinaryInFlight.delete(settled))
    const confirmed = await sending
    parts.acknowledge(confirmed)
    return confirmed
  } catch (thrown) {
    const ids = new Set(inputs.map((i) => i.id))
    s.pending = s.pending.filter((p) => !ids.has(p.id))
    s.error = thrown as PushError
    emit()
    throw thrown
  }
}

/** Opens the store: it takes its session's outbox, delivers it, loads the first snapshot (if any), then tails. */
function connect<S>(parts: StoreParts<S>): void {
  const { s, options, tail, emit } = parts
  s.closed = false
  if (typeof window !== 'undefined') {
    window.addEventListener('online', parts.onOnline)
    window.addEventListener('storage', parts.onStorage)
  }
  s.releaseOutbox ??= claimOutbox(parts.outboxKey)
  for (const entry of parts.outbox.entries()) parts.durable.deliver(entry.event.id)
  if (s.loaded) {
    // The tail opens a task later, the outbox above is delivered now: a page connects in
    // React's effects right after hydration, where a store's change re-renders synchronously in
    // the same task. The stream's 'connecting' made that task the longest a phone ran after its
    // first paint (figure 13 in bench/README.md). The tail resumes after the cursor whenever it opens.
    clearTimeout(s.tailOpening)
    s.tailOpening = setTimeout(() => {
      s.tailOpening = undefined
      if (!s.closed) tail.start()
    }, 0)
    return
  }
  s.loading ??= (async () => {
    for (let delay = 500; !s.closed; delay = Math.min(delay * 2, 10_000)) {
      try {
        const snap = await options.snapshot!()
        if (snap.lastSeenIndex > s.lastSeenIndex) {
          s.confirmedState = snap.state
          s.lastSeenIndex = snap.lastSeenIndex
          const folded = new Set(parts.outbox.letGo(s.lastSeenIndex))
          s.pending = s.pending.filter((p) => !folded.has(p.id))
        }
        s.loaded = true
        emit()
        if (!s.closed) tail.start()
        return
      } catch (failure) {
        if (failure instanceof A2HttpError && failure.refused) {
          // Not ours, or gone: retrying cannot help.
          s.connection = 'closed'
          s.error = new PushError('http_' + failure.status, failure.message, [], { status: failure.status, cause: failure })
          emit()
          return
        }
        s.connection = 'reconnecting'
        emit()
        await new Promise((r) => setTimeout(r, delay))
      }
    }
  })().finally(() => (s.loading = undefined))
}

function close<S>(parts: StoreParts<S>): void {
  const { s } = parts
  s.closed = true
  if (typeof window !== 'undefined') {
    window.removeEventListener('online', parts.onOnline)
    window.removeEventListener('storage', parts.onStorage)
  }
  // The page's courier takes this session's outbox only once this store's ordinary pushes still
  // on their way have settled (a message retried after its chat was left): a session's intents
  // leave in order, and a Stop never overtakes the generate it names from this page. Bounded
  // by the hold a Stop that overtook it gets anyway (UNSEEN_REFERENCE_HOLD_MS).
  const release = s.releaseOutbox
  s.releaseOutbox = undefined
  if (release) {
    let timer: ReturnType<typeof setTimeout> | undefined
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, UNSEEN_REFERENCE_HOLD_MS)))
    void Promise.race([Promise.all(parts.ordinaryInFlight), bound]).then(() => {
      clearTimeout(timer)
      release()
    })
  }
  parts.sleeps.wakeAll() // retry loops see `closed` and suspend
  clearTimeout(s.tailOpening)
  s.tailOpening = undefined
  parts.tail.stop()
  s.connection = 'closed'
  parts.emit()
}

/**
 * The server's snapshot itself while the browser's says the same (nothing pending, no outbox,
 * not connected yet): React then keeps the page it hydrated instead of rendering it once more,
 * synchronously, right after hydration. Events only grow, so equal counts are equal events.
 */
function sameAsServer<S>(snapshot: SessionSnapshot<S>, server: SessionSnapshot<S>): SessionSnapshot<S> {
  const same =
    snapshot.state === server.state &&
    snapshot.events.length === server.events.length &&
    snapshot.lastSeenIndex === server.lastSeenIndex &&
    snapshot.pending.length === 0 &&
    snapshot.connection === server.connection &&
    snapshot.error === undefined &&
    snapshot.loaded === server.loaded &&
    snapshot.outbox.length === 0
  return same ? server : snapshot
}
