/**
 * The browser's outbox for one session: durable pushes (a Stop) the server has not
 * acknowledged yet, persisted so the intent outlives the page that made it.
 *
 * It lives in localStorage, shared by every tab of the origin: a Stop pressed while the server
 * (or the network) is away is still delivered when the tab that pressed it is closed, by
 * another tab of that chat at once (`sync`, on the `storage` event) or by the next page to open
 * it. In the tab's sessionStorage it died with the tab, and a run resumed after the outage
 * answered on to its end. Several tabs share one list, so every change re-reads the stored list
 * and writes it back changed by id (a tab's whole list written over the other's dropped its
 * Stop); two tabs sending the same Stop is one event (its id).
 * Only the events are stored (id, type, payload, createdAt); the failure count is per page.
 *
 * An acknowledged intent stays, as the server's event (its log index, no longer -1), until a
 * page of its chat starts from a fold that holds it (`letGo`). A page's first screen may come
 * from the server rendered before the intent committed: a Stop pressed just before a reload is
 * acknowledged to the old page while the new page's HTML was read from the log without it, and
 * the reloaded page showed the answer past the cut until its tail brought the Stop. Nothing
 * acknowledged is sent again; the courier drops what no page let go within a day.
 */
import type { A2Event } from '../core/contract'

/** The part of the Web Storage API the outbox uses (localStorage fits; tests pass a map). */
export interface OutboxStorage {
  getItem(key: string): string | null
  setItem(key: string, value: string): void
  removeItem(key: string): void
}

export interface OutboxEntry {
  /** The optimistic event, with the client id every resend carries (index -1); once acknowledged, the server's event. */
  event: A2Event
  /** Sends that failed (network, 5xx, 408, 429) since this page loaded it. */
  failures: number
}

export interface Outbox {
  entries(): OutboxEntry[]
  add(event: A2Event): OutboxEntry
  failed(id: string): void
  remove(id: string): void
  /** The server took the intent (`event`, as the log holds it): never sent again, kept until a fold holds it. */
  acknowledged(event: A2Event): void
  /** Drops the acknowledged entries a fold up to `lastSeenIndex` holds; returns their ids. */
  letGo(lastSeenIndex: number): string[]
  /** Re-reads the stored list (another tab changed it); new events go to `adopt`. */
  sync(): void
}

/** The origin's localStorage, or undefined where there is none (server rendering, tests, a blocked storage). */
export function defaultOutboxStorage(): OutboxStorage | undefined {
  try {
    return typeof localStorage === 'undefined' ? undefined : localStorage
  } catch {
    return undefined // a SecurityError when storage is disabled: the outbox lives as long as the page
  }
}

/**
 * @param adopt called with the events another tab stored that this page did not have, found
 *   whenever the list is read again (a change of this page's, or `sync`): this page shows and
 *   sends them too.
 */
export function createOutbox(key: string, storage: OutboxStorage | undefined, adopt: (events: A2Event[]) => void = () => {}): Outbox {
  let entries: OutboxEntry[] = load(key, storage).map((event) => ({ event, failures: 0 }))

  /** The stored list as it is now, with this page's failure counts kept for the entries it had. */
  const reload = (): A2Event[] => {
    if (!storage) return []
    const failures = new Map(entries.map((e) => [e.event.id, e.failures]))
    const stored = load(key, storage)
    entries = stored.map((event) => ({ event, failures: failures.get(event.id) ?? 0 }))
    return stored.filter((event) => !failures.has(event.id))
  }

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
      const adopted = reload().filter((e) => e.id !== event.id)
      const entry = { event, failures: 0 }
      entries = [...entries.filter((e) => e.event.id !== event.id), entry]
      save()
      if (adopted.length > 0) adopt(adopted)
      return entry
    },
    failed(id) {
      entries = entries.map((e) => (e.event.id === id ? { ...e, failures: e.failures + 1 } : e))
    },
    remove(id) {
      // The store acknowledges every event a push answer or the tail brings: most were never
      // here (a message, a chunk), and reading the stored list for each was a storage read and
      // a parse for nothing. One another tab stored is removed by that tab, or by this one
      // once the `storage` event has brought it here.
      if (!entries.some((e) => e.event.id === id)) return
      const adopted = reload().filter((e) => e.id !== id)
      const before = entries.length
      entries = entries.filter((e) => e.event.id !== id)
      if (entries.length !== before) save()
      if (adopted.length > 0) adopt(adopted)
    },
    acknowledged(event) {
      if (!entries.some((e) => e.event.id === event.id && !isAcknowledged(e))) return
      const adopted = reload().filter((e) => e.id !== event.id)
      entries = entries.map((e) => (e.event.id === event.id ? { ...e, event } : e))
      save()
      if (adopted.length > 0) adopt(adopted)
    },
    letGo(lastSeenIndex) {
      const held = (e: OutboxEntry) => isAcknowledged(e) && e.event.index <= lastSeenIndex
      if (!entries.some(held)) return []
      const adopted = reload()
      const gone = entries.filter(held).map((e) => e.event.id)
      entries = entries.filter((e) => !held(e))
      save()
      const left = adopted.filter((e) => !gone.includes(e.id))
      if (left.length > 0) adopt(left)
      return gone
    },
    sync() {
      const adopted = reload()
      if (adopted.length > 0) adopt(adopted)
    },
  }
}

/** Whether the server took this intent: the entry is its event in the log, kept only to cut a page rendered before it. */
export function isAcknowledged(entry: OutboxEntry): boolean {
  return entry.event.index >= 0
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

/** Whether `event` was pressed less than `ms` ago (a clock set back counts the same; an unreadable time, never). */
export function pressedWithin(event: A2Event, ms: number, now = Date.now()): boolean {
  const age = now - Date.parse(event.createdAt)
  return Number.isFinite(age) && Math.abs(age) < ms
}

/**
 * How long a durable intent refused `invalid_reference` (it names an event the log does not
 * hold) is held and sent again, counted from its press, before the refusal is taken as final.
 * The event it names is the answer this browser asked for just before: another tab's, or
 * this page's push still on its way while the Stop left by another door (a second tab that
 * adopted it, the courier of a chat left). That push is an ordinary one: at most 4 sends,
 * 4.25 s of waits between them (250 + 1,000 + 3,000 ms), each body given at most 10 s by the
 * route (A2_BODY_TIMEOUT_MS): it lands within ~45 s or never. 60 s covers it; a Stop of
 * nothing costs one small POST a second for a minute.
 */
export const UNSEEN_REFERENCE_HOLD_MS = 60_000

/** A final refusal that is not final yet: `invalid_reference` within the hold since the intent was pressed. */
export function heldForReference(event: A2Event, code: string, now = Date.now()): boolean {
  return code === 'invalid_reference' && pressedWithin(event, UNSEEN_REFERENCE_HOLD_MS, now)
}

/**
 * How long a durable intent refused `not_found` is kept, counted from its press. Its chat is
 * not the identity's this browser now sends as: another account signed in here (or it was
 * deleted). The server wrote nothing, so the intent reached no one else's chat; kept, it is
 * sent once by each page that loads, and lands when a page of its own identity does. An
 * answer streams for minutes, so after 24 h the Stop has nothing left to stop.
 */
export const NOT_FOUND_HOLD_MS = 24 * 3_600_000

/**
 * How long an acknowledged intent no page let go is kept, counted from its press: the page
 * that would (its chat opened again) may never come. A first screen read before the intent
 * committed is at most one render old; an answer streams for minutes. A day of Stops is a few
 * hundred bytes each.
 */
export const ACKNOWLEDGED_KEEP_MS = NOT_FOUND_HOLD_MS

/** A refusal that may be the browser's identity, not the intent: `not_found` within its hold. */
export function keptForItsIdentity(event: A2Event, code: string, now = Date.now()): boolean {
  return code === 'not_found' && pressedWithin(event, NOT_FOUND_HOLD_MS, now)
}

/** The prefix of every session's outbox key in storage (`a2.outbox:<the session's events URL>`). */
export const OUTBOX_PREFIX = 'a2.outbox:'

/** A session's events URL under the routes' `base`: where its pushes go, and what names its outbox. */
export function eventsUrlOf(sessionId: string, base = '/api'): string {
  return `${base}/sessions/${encodeURIComponent(sessionId)}/events`
}

/**
 * The storage key of a session's outbox, present exactly while it holds an intent (an empty
 * outbox removes its key). A page rendered on the server from the log up to an index checks it
 * before painting (`heldByOutbox`): an intent that fold lacks cuts what the page may show.
 */
export function outboxKeyOf(sessionId: string, base = '/api'): string {
  return `${OUTBOX_PREFIX}${eventsUrlOf(sessionId, base)}`
}

/**
 * Whether a page whose first screen folds the log up to `lastSeenIndex` must wait for the
 * outbox (stored as `raw`) before painting it: some intent in it is not in that fold. Runs as
 * it is inside the page's HTML (components/chat/hold-if-pending.tsx): no imports, no closures.
 */
export function heldByOutbox(raw: string | null, lastSeenIndex: number): boolean {
  if (raw === null) return false
  try {
    const list = JSON.parse(raw)
    return !Array.isArray(list) || list.some((e) => !(e && e.index >= 0 && e.index <= lastSeenIndex))
  } catch {
    return true
  }
}

/** Outbox keys whose session store is connected in this page (it delivers them; the courier leaves them alone). */
const claims = new Map<string, number>()
/** Told when a key is no longer claimed: what is left in it is the courier's to send now. */
const releaseListeners = new Set<() => void>()

/** Marks `key` as delivered by a connected session store of this page, until the returned release. */
export function claimOutbox(key: string): () => void {
  claims.set(key, (claims.get(key) ?? 0) + 1)
  let released = false
  return () => {
    if (released) return
    released = true
    const left = (claims.get(key) ?? 1) - 1
    if (left > 0) return void claims.set(key, left)
    claims.delete(key)
    for (const listener of [...releaseListeners]) listener()
  }
}

/** Calls `listener` whenever a key stops being claimed; returns the unsubscribe. */
export function onOutboxReleased(listener: () => void): () => void {
  releaseListeners.add(listener)
  return () => void releaseListeners.delete(listener)
}

export function outboxClaimed(key: string): boolean {
  return claims.has(key)
}
