/**
 * The session store's SSE tail: one EventSource on the events route, resumed after the
 * store's cursor. The browser retries a dropped stream by itself (with Last-Event-ID); a
 * stream the server refused or closed is reopened here after the cursor, backing off from
 * 0.5 s to 10 s, so a server away for minutes costs one request every 10 s.
 */
import type { A2Event } from '../core/contract'
import { decodeSseEvent, WireError } from '../core/wire'

export type Connection = 'connecting' | 'open' | 'reconnecting' | 'closed'

export interface TailSourceOptions {
  /** The session's events route. */
  url: string
  EventSource?: typeof EventSource
  /** The cursor to resume after, read at each (re)open. */
  after(): number
  onEvent(event: A2Event): void
  /** The store's connection state, which the snapshot's load changes too. */
  connection: { get(): Connection; set(next: Connection): void }
  /** The stream opened: the server is back. */
  onOpen(): void
}

export interface TailSource {
  /** Opens the stream unless it is open. */
  start(): void
  /** Reopens after the cursor at once (a gap in the feed): the stream is resynced. */
  resubscribe(): void
  stop(): void
}

const FIRST_RECONNECT_MS = 500
const MAX_RECONNECT_MS = 10_000

export function createTailSource(options: TailSourceOptions): TailSource {
  const { connection } = options
  let source: EventSource | undefined
  let reconnectTimer: ReturnType<typeof setTimeout> | undefined
  let reconnectDelay = FIRST_RECONNECT_MS
  let stopped = true

  const open = () => {
    if (stopped || (typeof options.EventSource === 'undefined' && typeof EventSource === 'undefined')) return
    const Source = options.EventSource ?? EventSource
    const now = connection.get()
    connection.set(now === 'open' ? 'reconnecting' : now === 'closed' ? 'connecting' : now)
    const es = new Source(`${options.url}?after=${options.after()}`)
    source = es
    es.onopen = () => {
      reconnectDelay = FIRST_RECONNECT_MS
      connection.set('open')
      options.onOpen()
    }
    es.onmessage = (message) => {
      let event: A2Event
      try {
        event = decodeSseEvent(message.data)
      } catch (error) {
        // Not an event (a proxy's injected frame): dropped, loudly. A real gap it leaves is
        // caught by the store's index check, which resubscribes.
        console.error('[a2] session store: dropped an SSE frame:', error instanceof WireError ? error.message : error)
        return
      }
      options.onEvent(event)
    }
    es.onerror = () => {
      if (source !== es) return
      if (es.readyState === 2 /* CLOSED */) {
        es.close()
        source = undefined
        connection.set('reconnecting')
        reconnectTimer = setTimeout(open, reconnectDelay)
        reconnectDelay = Math.min(MAX_RECONNECT_MS, reconnectDelay * 2)
      } else if (connection.get() !== 'reconnecting') {
        connection.set('reconnecting')
      }
    }
  }

  const drop = () => {
    source?.close()
    source = undefined
    clearTimeout(reconnectTimer)
  }

  return {
    start() {
      stopped = false
      if (!source) open()
    },
    resubscribe() {
      drop()
      if (!stopped) reconnectTimer = setTimeout(open, 0)
    },
    stop() {
      stopped = true
      drop()
    },
  }
}
