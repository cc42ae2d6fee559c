/**
 * A plain, framework-free store for one session in the browser: the SSE tail (resuming
 * with Last-Event-ID, reconnecting with backoff), optimistic pushes with client event
 * ids (retried safely: the id makes a repeat a no-op), the confirmed `events` feed, the
 * stream frontier, and the app's fold over all of it. React binds to it with
 * useSyncExternalStore; tests drive it without React.
 */
import type { A2Event } from './contract'

export interface PushInput {
  id?: string
  type: string
  payload: unknown
}

export type Connection = 'connecting' | 'open' | 'reconnecting' | 'closed'

export interface PushError {
  code: string
  message: string
  status?: number
  /** The events that were rolled back, so the UI can offer to retry them. */
  inputs: PushInput[]
}

export interface SessionSnapshot<S> {
  /** The fold of confirmed events, then this browser's pending pushes on top. */
  state: S
  /** Confirmed events, in index order. */
  events: A2Event[]
  /** The highest index this browser has received: the `lastSeenIndex` a Stop reports. */
  frontier: number
  pending: A2Event[]
  connection: Connection
  error?: PushError
  /** False until the snapshot (if any) is in. */
  loaded: boolean
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
  /** Push retry delays on network errors and 5xx; 4xx are final. */
  retryDelaysMs?: number[]
  /**
   * Loads a server-side fold before the tail opens, so a long session (100k events) costs
   * one small state instead of replaying its whole log into the browser.
   */
  snapshot?: () => Promise<{ state: S; frontier: number }>
}

export interface SessionStore<S> {
  getSnapshot(): SessionSnapshot<S>
  subscribe(listener: () => void): () => void
  /** Appends optimistically and pushes; resolves with the confirmed events, rejects with a PushError. */
  push(inputs: PushInput | PushInput[]): Promise<A2Event[]>
  /** Feeds confirmed events (from the tail or a push answer); duplicates and replays are ignored. */
  receive(events: A2Event[]): void
  connect(): void
  close(): void
  clearError(): void
}

/** Client event ids: 22 url-safe characters of randomness, accepted by the push route's id rule. */
export function clientEventId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  return 'c' + btoa(String.fromCharCode(...bytes)).replaceAll('+', '-').replaceAll('/', '_').replaceAll('=', '')
}

export function createSessionStore<S>(options: SessionStoreOptions<S>): SessionStore<S> {
  const base = options.base ?? '/api'
  const doFetch = options.fetch ?? ((...args: Parameters<typeof fetch>) => fetch(...args))
  const retryDelays = options.retryDelaysMs ?? [250, 1000, 3000]
  const listeners = new Set<() => void>()

  let confirmedState = options.initial
  const events: A2Event[] = [...(options.events ?? [])]
  let frontier = options.after ?? -1
  let pending: A2Event[] = []
  const confirmedIds = new Set(events.map((e) => e.id))
  let connection: Connection = 'closed'
  let error: PushError | undefined
  let snapshot: SessionSnapshot<S> | undefined
  let source: EventSource | undefined
  let reconnectTimer: ReturnType<typeof setTimeout> | undefined
  let reconnectDelay = 500
  let closed = false
  let loaded = !options.snapshot
  let queue: Promise<void> = Promise.resolve()
  let loading: Promise<void> | undefined

  const emit = () => {
    snapshot = undefined
    for (const listener of listeners) listener()
  }

  const receive = (incoming: A2Event[]) => {
    let changed = false
    for (const event of incoming) {
      // Duplicate delivery (a push answer and the tail, or a replay after reconnect) is a no-op.
      if (event.index <= frontier) continue
      if (event.index !== frontier + 1) {
        // A gap should be impossible (the log is gapless and the tail ordered); resync from the frontier.
        resubscribe()
        break
      }
      frontier = event.index
      events.push(event)
      confirmedIds.add(event.id)
      confirmedState = options.reducer(confirmedState, event)
      changed = true
    }
    if (changed) {
      pending = pending.filter((p) => !confirmedIds.has(p.id))
      emit()
    }
  }

  const open = () => {
    if (closed || typeof options.EventSource === 'undefined' && typeof EventSource === 'undefined') return
    const Source = options.EventSource ?? EventSource
    connection = connection === 'open' ? 'reconnecting' : connection === 'closed' ? 'connecting' : connection
    emit()
    const es = new Source(`${base}/sessions/${encodeURIComponent(options.sessionId)}/events?after=${frontier}`)
    source = es
    es.onopen = () => {
      reconnectDelay = 500
      connection = 'open'
      emit()
    }
    es.onmessage = (message) => {
      try {
        receive([JSON.parse(message.data) as A2Event])
      } catch {
        // not an event: ignore
      }
    }
    es.onerror = () => {
      if (source !== es) return
      // The browser retries by itself (with Last-Event-ID) unless the stream was refused;
      // then we reopen from our own frontier, backing off to 10 s.
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

  const send = async (inputs: PushInput[]): Promise<A2Event[]> => {
    const url = `${base}/sessions/${encodeURIComponent(options.sessionId)}/events`
    const body = JSON.stringify(inputs.length === 1 ? inputs[0] : { events: inputs })
    for (let attempt = 0; ; attempt++) {
      let response: Response | undefined
      try {
        response = await doFetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      } catch (networkError) {
        if (attempt >= retryDelays.length) {
          throw { code: 'network', message: 'could not reach the server', inputs } satisfies PushError
        }
      }
      if (response) {
        const json = (await response.json().catch(() => ({}))) as { events?: A2Event[]; error?: { code: string; message: string } }
        if (response.ok && json.events) return json.events
        const retryable = response.status >= 500 || response.status === 429
        if (!retryable || attempt >= retryDelays.length) {
          throw {
            code: json.error?.code ?? 'http_' + response.status,
            message: json.error?.message ?? `the server answered ${response.status}`,
            status: response.status,
            inputs,
          } satisfies PushError
        }
      }
      // Same body, same ids: a retry after a lost answer is answered with the original events.
      await new Promise((r) => setTimeout(r, retryDelays[attempt]))
    }
  }

  return {
    getSnapshot() {
      snapshot ??= {
        state: pending.reduce(options.reducer, confirmedState),
        events,
        frontier,
        pending,
        connection,
        error,
        loaded,
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
      emit()
      try {
        // Pushes leave in the order they were made: a Stop pressed right after Send must
        // reach the log after the `generate` it names, or it would cancel nothing.
        const sending = queue.then(() => send(inputs))
        queue = sending.then(
          () => undefined,
          () => undefined,
        )
        const confirmed = await sending
        // Fold the answer now only if it continues the feed; otherwise the tail brings it in order.
        if (confirmed[0]?.index === frontier + 1) receive(confirmed)
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
    connect() {
      closed = false
      if (loaded) {
        if (!source) open()
        return
      }
      loading ??= (async () => {
        for (let delay = 500; !closed; delay = Math.min(delay * 2, 10_000)) {
          try {
            const snap = await options.snapshot!()
            if (snap.frontier > frontier) {
              confirmedState = snap.state
              frontier = snap.frontier
            }
            loaded = true
            emit()
            if (!closed && !source) open()
            return
          } catch (failure) {
            const status = (failure as { status?: number }).status
            if (status !== undefined && status >= 400 && status < 500) {
              // Not ours, or gone: retrying cannot help.
              connection = 'closed'
              error = { code: 'http_' + status, message: (failure as Error).message, status, inputs: [] }
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
