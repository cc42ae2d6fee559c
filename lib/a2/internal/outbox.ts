/**
 * The browser's outbox for one session: durable pushes (a Stop) the server has not
 * acknowledged yet, persisted so a reload made while the server is away still knows them.
 * Only the events are stored (id, type, payload, createdAt); the failure count is per page.
 */
import type { A2Event } from './contract'

/** The part of the Web Storage API the outbox uses (sessionStorage fits; tests pass a map). */
export interface OutboxStorage {
  getItem(key: string): string | null
  setItem(key: string, value: string): void
  removeItem(key: string): void
}

export interface OutboxEntry {
  /** The optimistic event, with the client id every resend carries. */
  event: A2Event
  /** Sends that failed (network, 5xx, 408, 429) since this page loaded it. */
  failures: number
}

export interface Outbox {
  entries(): OutboxEntry[]
  add(event: A2Event): OutboxEntry
  failed(id: string): void
  remove(id: string): void
}

/** The tab's sessionStorage, or undefined where there is none (server rendering, tests, a blocked storage). */
export function defaultOutboxStorage(): OutboxStorage | undefined {
  try {
    return typeof sessionStorage === 'undefined' ? undefined : sessionStorage
  } catch {
    return undefined // a SecurityError when storage is disabled: the outbox lives as long as the page
  }
}

export function createOutbox(key: string, storage: OutboxStorage | undefined): Outbox {
  let entries: OutboxEntry[] = load(key, storage).map((event) => ({ event, failures: 0 }))

  const save = () => {
    if (!storage) return
    try {
      if (entries.length === 0) storage.removeItem(key)
      else storage.setItem(key, JSON.stringify(entries.map((e) => e.event)))
    } catch {
      // Quota or a disabled storage: the intent still lives in this page and is still retried.
    }
  }

  return {
    entries: () => entries,
    add(event) {
      const entry = { event, failures: 0 }
      entries = [...entries, entry]
      save()
      return entry
    },
    failed(id) {
      entries = entries.map((e) => (e.event.id === id ? { ...e, failures: e.failures + 1 } : e))
    },
    remove(id) {
      const before = entries.length
      entries = entries.filter((e) => e.event.id !== id)
      if (entries.length !== before) save()
    },
  }
}

function load(key: string, storage: OutboxStorage | undefined): A2Event[] {
  try {
    const raw = storage?.getItem(key)
    const parsed: unknown = raw ? JSON.parse(raw) : []
    return Array.isArray(parsed) ? parsed.filter(isEvent) : []
  } catch {
    return []
  }
}

function isEvent(value: unknown): value is A2Event {
  const e = value as Partial<A2Event> | null
  return typeof e === 'object' && e !== null && typeof e.id === 'string' && typeof e.type === 'string' && 'payload' in e
}
