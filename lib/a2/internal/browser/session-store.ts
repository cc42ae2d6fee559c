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
import {
  claimOutbox,
  createOutbox,
  defaultOutboxStorage,
  heldForReference,
  keptForItsIdentity,
  OUTBOX_PREFIX,
  UNSEEN_REFERENCE_HOLD_MS,
  type OutboxEntry,
  type OutboxStorage,
} from './outbox'
import { postPush, PushError } from './post-push'
import { decodeSseEvent, WireError, type PushedEvent } from '../core/wire'

export type { OutboxEntry, OutboxStorage } from './outbox'
export { PushError } from './post-push'

export type PushInput = PushedEvent

export type Connection = 'connecting' | 'open' | 'reconnecting' | 'closed'

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

export function createSessionStore<S>(options: SessionStoreOptions<S>): SessionStore<S> {
  const base = options.base ?? '/api'
  const url = `${base}/sessions/${encodeURIComponent(options.sessionId)}/events`
  const doFetch = options.fetch ?? ((...args: Parameters<typeof fetch>) => fetch(...args))
  const retryDelays = options.retryDelaysMs ?? [250, 1000, 3000]
  const durableDelays = options.retryDelaysMs ?? DURABLE_RETRY_MS
  const durableTypes = new Set(options.durableTypes ?? [])
  const outboxKey = `${OUTBOX_PREFIX}${url}`
  const outbox = createOutbox(outboxKey, options.storage === null ? undefined : (options.storage ?? defaultOutboxStorage()), (events) =>
    adopt(events),
  )
  const listeners = new Set<() => void>()

  let confirmedState = options.initial
  const events: A2Event[] = [...(options.events ?? [])]
  let lastSeenIndex = options.after ?? -1
  // A reloaded page shows its unacknowledged intents at once: the view stays cut.
  let pending: A2Event[] = outbox.entries().map((e) => e.event)
  const confirmedIds = new Set(events.map((e) => e.id))
  let connection: Connection = 'closed'
  let error: PushError | undefined
  let snapshot: SessionSnapshot<S> | undefined
  let source: EventSource | undefined
  let reconnectTimer: ReturnType<typeof setTimeout> | undefined
  let reconnectDelay = 500
  let closed = false
  /** While connected this store delivers its session's outbox; closed, the page's courier does (outbox-courier.ts). */
  let releaseOutbox: (() => void) | undefined
  let loaded = !options.snapshot
  let queue: Promise<void> = Promise.resolve()
  let loading: Promise<void> | undefined
  /** Ordinary pushes not settled yet (each as its place in the queue): what a close waits for before the courier takes the outbox. */
  const ordinaryInFlight = new Set<Promise<void>>()
  /** Outbox ids with a delivery loop running, and the push() promises waiting on them. */
  const delivering = new Set<string>()
  const waiting = new Map<string, Array<{ resolve: (events: A2Event[]) => void; reject: (error: PushError) => void }>>()
  /** Retry sleeps cut short when the server is known to be back (the tail reopened, the browser went online). */
  const sleepers = new Set<() => void>()

  const emit = () => {
    snapshot = undefined
    for (const listener of listeners) listener()
  }

  const wake = () => {
    for (const sleeper of [...sleepers]) sleeper()
  }

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        sleepers.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      sleepers.add(done)
    })

  const settle = (id: string, outcome: { events: A2Event[] } | { error: PushError }) => {
    for (const waiter of waiting.get(id) ?? []) {
      if ('events' in outcome) waiter.resolve(outcome.events)
      else waiter.reject(outcome.error)
    }
    waiting.delete(id)
  }

  const receive = (incoming: A2Event[]) => {
    let changed = false
    for (const event of incoming) {
      // Duplicate delivery (a push answer and the tail, or a replay after reconnect) is a no-op.
      if (event.index <= lastSeenIndex) continue
      if (event.index !== lastSeenIndex + 1) {
        // A gap should be impossible (the log is gapless and the tail ordered); resync from lastSeenIndex.
        resubscribe()
        break
      }
      lastSeenIndex = event.index
      events.push(event)
      confirmedIds.add(event.id)
      confirmedState = options.reducer(confirmedState, event)
      if (waiting.has(event.id) || outbox.entries().some((e) => e.event.id === event.id)) {
        // The tail brought an intent whose answer was lost, or that another tab delivered: it is
        // in the log, so it is acknowledged.
        outbox.remove(event.id)
        settle(event.id, { events: [event] })
      }
      changed = true
    }
    if (changed) {
      pending = pending.filter((p) => !confirmedIds.has(p.id))
      emit()
    }
  }

  /** The server answered a push with its events: fold them, and stop showing what the fold now holds. */
  const acknowledge = (confirmed: A2Event[]) => {
    for (const event of confirmed) outbox.remove(event.id)
    // Fold the answer now only if it continues the feed; otherwise the tail brings it in order.
    if (confirmed[0]?.index === lastSeenIndex + 1) receive(confirmed)
    // A repeat is answered with the original events, which the feed (or the snapshot) may already hold.
    const folded = new Set(confirmed.filter((e) => e.index <= lastSeenIndex).map((e) => e.id))
    pending = pending.filter((p) => !folded.has(p.id))
    emit()
  }

  const open = () => {
    if (closed || (typeof options.EventSource === 'undefined' && typeof EventSource === 'undefined')) return
    const Source = options.EventSource ?? EventSource
    connection = connection === 'open' ? 'reconnecting' : connection === 'closed' ? 'connecting' : connection
    emit()
    const es = new Source(`${url}?after=${lastSeenIndex}`)
    source = es
    es.onopen = () => {
      reconnectDelay = 500
      connection = 'open'
      emit()
      wake() // the server is back: an intent waiting in the outbox goes now, not at its next retry
    }
    es.onmessage = (message) => {
      let event: A2Event
      try {
        event = decodeSseEvent(message.data)
      } catch (error) {
        // Not an event (a proxy's injected frame): dropped, loudly. A real gap it leaves is
        // caught by the index check in receive(), which resubscribes.
        console.error('[a2] session store: dropped an SSE frame:', error instanceof WireError ? error.message : error)
        return
      }
      receive([event])
    }
    es.onerror = () => {
      if (source !== es) return
      // The browser retries by itself (with Last-Event-ID) unless the stream was refused;
      // then we reopen after our own lastSeenIndex, backing off to 10 s.
      if (es.readyState === 2 /* CLOSED */) {
        es.close()
        source = undefined
        connection = 'reconnecting'
        emit()
        reconnectTimer = setTimeout(open, reconnectDelay)
        reconnectDelay = Math.min(10_000, reconnectDelay * 2)
      } else if (connection !== 'reconnecting') {
        connection = 'reconnecting'
        emit()
      }
    }
  }

  const resubscribe = () => {
    source?.close()
    source = undefined
    clearTimeout(reconnectTimer)
    if (!closed) reconnectTimer = setTimeout(open, 0)
  }

  const postOnce = (inputs: PushInput[], durable = false) => postPush(doFetch, url, inputs, { keepalive: durable })

  /** An ordinary push: a few retries (same body, same ids: a repeat is one event), then it fails. */
  const send = async (inputs: PushInput[]): Promise<A2Event[]> => {
    for (let attempt = 0; ; attempt++) {
      const outcome = await postOnce(inputs)
      if (outcome.kind === 'ok') return outcome.events
      if (outcome.kind === 'final' || attempt >= retryDelays.length) throw outcome.error
      await sleep(retryDelays[attempt])
    }
  }

  /**
   * Delivers one outbox entry: retried until acknowledged or finally refused. It waits its
   * turn in the push queue (a Stop must land after the `generate` it names) and holds it
   * while it retries, so later pushes keep their order behind it. A closed store suspends
   * the loop; the entry stays in storage and connect() (or the next page) resumes it.
   */
  const deliver = (id: string) => {
    if (delivering.has(id)) return
    delivering.add(id)
    const run = queue.then(async () => {
      for (;;) {
        const entry = outbox.entries().find((e) => e.event.id === id)
        if (!entry || closed) return
        const outcome = await postOnce([{ id, type: entry.event.type, payload: entry.event.payload }], true)
        if (outcome.kind === 'ok') {
          acknowledge(outcome.events)
          settle(id, { events: outcome.events })
          return
        }
        // A Stop that overtook the answer it names (another tab's, or this page's still on its way) is held a while, not dropped.
        if (outcome.kind === 'final' && !heldForReference(entry.event, outcome.error.code)) {
          // Another identity's chat (this browser switched accounts): kept for a page of that identity.
          if (!keptForItsIdentity(entry.event, outcome.error.code)) outbox.remove(id)
          pending = pending.filter((p) => p.id !== id)
          error = outcome.error
          emit()
          settle(id, { error: outcome.error })
          return
        }
        outbox.failed(id)
        emit()
        await sleep(durableDelays[Math.min(entry.failures, durableDelays.length - 1)])
      }
    })
    queue = run
      .finally(() => delivering.delete(id))
      .then(
        () => undefined,
        () => undefined,
      )
  }

  const pushDurable = (optimistic: A2Event[]): Promise<A2Event[]> => {
    const acknowledged = optimistic.map(
      (event) =>
        new Promise<A2Event[]>((resolve, reject) => {
          waiting.set(event.id, [...(waiting.get(event.id) ?? []), { resolve, reject }])
          outbox.add(event)
          deliver(event.id)
        }),
    )
    emit()
    return Promise.all(acknowledged).then((lists) => lists.flat())
  }

  const onOnline = () => wake()

  /** Another tab's intents, found in the shared list: this page shows them and sends them too. */
  function adopt(stored: A2Event[]) {
    const added = stored.filter((event) => !confirmedIds.has(event.id) && !pending.some((p) => p.id === event.id))
    if (added.length === 0) return
    pending = [...pending, ...added]
    emit()
    if (!closed) for (const event of added) deliver(event.id)
  }

  /** Another tab changed this session's outbox (the browser's `storage` event). */
  const onStorage = (change: StorageEvent) => {
    if (change.key === outboxKey || change.key === null) outbox.sync()
  }

  return {
    getSnapshot() {
      snapshot ??= {
        state: pending.reduce(options.reducer, confirmedState),
        events,
        lastSeenIndex,
        pending,
        connection,
        error,
        loaded,
        outbox: outbox.entries(),
      }
      return snapshot
    },
    subscribe(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    async push(input) {
      const inputs = (Array.isArray(input) ? input : [input]).map((i) => ({ ...i, id: i.id ?? clientEventId() }))
      const optimistic = inputs.map<A2Event>((i) => ({
        id: i.id,
        sessionId: options.sessionId,
        index: -1,
        type: i.type,
        payload: i.payload,
        createdAt: new Date().toISOString(),
      }))
      pending = [...pending, ...optimistic]
      error = undefined
      if (inputs.every((i) => durableTypes.has(i.type))) return pushDurable(optimistic)
      emit()
      try {
        // Pushes leave in the order they were made: a Stop pressed right after Send must
        // reach the log after the `generate` it names, or it would cancel nothing.
        const sending = queue.then(() => send(inputs))
        queue = sending.then(
          () => undefined,
          () => undefined,
        )
        const settled = queue
        ordinaryInFlight.add(settled)
        void settled.then(() => ordinaryInFlight.delete(settled))
        const confirmed = await sending
        acknowledge(confirmed)
        return confirmed
      } catch (thrown) {
        const ids = new Set(inputs.map((i) => i.id))
        pending = pending.filter((p) => !ids.has(p.id))
        error = thrown as PushError
        emit()
        throw thrown
      }
    },
    receive,
    amend(change) {
      const next = change(confirmedState)
      if (next === confirmedState) return
      confirmedState = next
      emit()
    },
    connect() {
      closed = false
      if (typeof window !== 'undefined') {
        window.addEventListener('online', onOnline)
        window.addEventListener('storage', onStorage)
      }
      releaseOutbox ??= claimOutbox(outboxKey)
      for (const entry of outbox.entries()) deliver(entry.event.id)
      if (loaded) {
        if (!source) open()
        return
      }
      loading ??= (async () => {
        for (let delay = 500; !closed; delay = Math.min(delay * 2, 10_000)) {
          try {
            const snap = await options.snapshot!()
            if (snap.lastSeenIndex > lastSeenIndex) {
              confirmedState = snap.state
              lastSeenIndex = snap.lastSeenIndex
            }
            loaded = true
            emit()
            if (!closed && !source) open()
            return
          } catch (failure) {
            if (failure instanceof A2HttpError && failure.refused) {
              // Not ours, or gone: retrying cannot help.
              connection = 'closed'
              error = new PushError('http_' + failure.status, failure.message, [], { status: failure.status, cause: failure })
              emit()
              return
            }
            connection = 'reconnecting'
            emit()
            await new Promise((r) => setTimeout(r, delay))
          }
        }
      })().finally(() => (loading = undefined))
    },
    close() {
      closed = true
      if (typeof window !== 'undefined') {
        window.removeEventListener('online', onOnline)
        window.removeEventListener('storage', onStorage)
      }
      // The page's courier takes this session's outbox only once this store's ordinary pushes still
      // on their way have settled (a message retried after its chat was left): a session's intents
      // leave in order, and a Stop never overtakes the generate it names from this page. Bounded
      // by the hold a Stop that overtook it gets anyway (UNSEEN_REFERENCE_HOLD_MS).
      const release = releaseOutbox
      releaseOutbox = undefined
      if (release) {
        let timer: ReturnType<typeof setTimeout> | undefined
        const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, UNSEEN_REFERENCE_HOLD_MS)))
        void Promise.race([Promise.all(ordinaryInFlight), bound]).then(() => {
          clearTimeout(timer)
          release()
        })
      }
      wake() // retry loops see `closed` and suspend
      clearTimeout(reconnectTimer)
      source?.close()
      source = undefined
      connection = 'closed'
      emit()
    },
    clearError() {
      error = undefined
      emit()
    },
  }
}
