/**
 * Delivers the browser's stored intents (a Stop) for sessions no store of this page has open.
 *
 * A session store sends its session's outbox only while it is connected: a Stop pressed while
 * the server was away, whose chat was then left for another (or whose tab was closed), waited
 * for that chat to be opened again, while the run, resumed after the outage, answered on to its
 * end. The app starts one courier a page: it sends every stored intent whose session has no
 * connected store here — at once, when a store of this page closes, when the browser comes
 * back online, when another tab stores one, and every second while any is refused for now —
 * and marks each acknowledged (outbox.ts keeps it for the chat's next page) or drops it refused for good (one refused `not_found`, another
 * identity's chat, stays for a page of that identity: keptForItsIdentity). Tabs may send the same intent at once: its id makes it one event.
 */
import {
  ACKNOWLEDGED_KEEP_MS,
  createOutbox,
  heldForReference,
  isAcknowledged,
  keptForItsIdentity,
  onOutboxReleased,
  OUTBOX_PREFIX,
  outboxClaimed,
  pressedWithin,
  type OutboxStorage,
} from './outbox'
import { postPush } from './post-push'

/** Web Storage with enumeration (localStorage fits; tests pass a map). */
export interface CourierStorage extends OutboxStorage {
  readonly length: number
  key(index: number): string | null
}

export interface OutboxCourierOptions {
  fetch?: typeof fetch
  /** Default: the origin's localStorage, where session stores keep their outboxes. */
  storage?: CourierStorage | null
  /** Waits between rounds while an intent is still refused for now; the last repeats. */
  retryDelaysMs?: number[]
}

/** As a session store's durable pushes: a restarted server holds resumed runs 3 s, so a Stop should land within it. */
const RETRY_DELAYS_MS = [250, 500, 1_000]

/** Starts delivering; returns the stop. Does nothing where there is no storage (server rendering). */
export function startOutboxCourier(options: OutboxCourierOptions = {}): () => void {
  const storage = options.storage === null ? undefined : (options.storage ?? localStorageOrNone())
  if (!storage) return () => {}
  const doFetch = options.fetch ?? ((...args: Parameters<typeof fetch>) => fetch(...args))
  const delays = options.retryDelaysMs ?? RETRY_DELAYS_MS
  let stopped = false
  let running = false
  let again = false
  let refusedRounds = 0
  let timer: ReturnType<typeof setTimeout> | undefined
  /** Intents this page sent and the server refused as another identity's chat: kept in storage, not sent again by this page. */
  const notOurs = new Set<string>()

  /** Outbox keys no connected store of this page delivers, naming a path of this origin. */
  const unclaimedKeys = (): string[] => {
    const keys: string[] = []
    for (let i = 0; i < storage.length; i++) {
      const key = storage.key(i)
      if (!key?.startsWith(OUTBOX_PREFIX) || outboxClaimed(key)) continue
      const url = key.slice(OUTBOX_PREFIX.length)
      if (url.startsWith('/') && !url.startsWith('//')) keys.push(key)
    }
    return keys
  }

  /** Sends each intent once; true when one is still refused for now (network, 5xx, 408, 429). */
  const sendAll = async (): Promise<boolean> => {
    let refused = false
    for (const key of unclaimedKeys()) {
      const outbox = createOutbox(key, storage)
      for (const entry of outbox.entries()) {
        const { event } = entry
        // A store of this session connected meanwhile: it delivers from here on.
        if (stopped || outboxClaimed(key)) break
        if (isAcknowledged(entry)) {
          // Kept for the next page of its chat; a chat not opened again within a day lets it go here.
          if (!pressedWithin(event, ACKNOWLEDGED_KEEP_MS)) outbox.remove(event.id)
          continue
        }
        if (notOurs.has(event.id)) continue
        const outcome = await postPush(doFetch, key.slice(OUTBOX_PREFIX.length), [{ id: event.id, type: event.type, payload: event.payload }], {
          keepalive: true,
        })
        // A Stop that overtook the answer it names (still on its way from a tab) is held a while, not dropped.
        if (outcome.kind === 'retry' || (outcome.kind === 'final' && heldForReference(event, outcome.error.code))) refused = true
        else if (outcome.kind === 'final' && keptForItsIdentity(event, outcome.error.code)) notOurs.add(event.id)
        else {
          const landed = outcome.kind === 'ok' ? outcome.events.find((e) => e.id === event.id) : undefined
          if (landed) outbox.acknowledged(landed)
          else outbox.remove(event.id) // refused for good
        }
      }
    }
    return refused
  }

  const round = async () => {
    if (stopped) return
    if (running) return void (again = true)
    running = true
    clearTimeout(timer)
    let refused: boolean
    try {
      do {
        again = false
        refused = await sendAll()
      } while (again && !stopped)
    } catch (error) {
      console.error('[a2] outbox courier:', error)
      refused = true
    } finally {
      running = false
    }
    refusedRounds = refused ? refusedRounds + 1 : 0
    if (refused && !stopped) timer = setTimeout(round, delays[Math.min(refusedRounds - 1, delays.length - 1)])
  }

  const onOnline = () => void round()
  const onStorage = (change: StorageEvent) => {
    if (change.key === null || change.key.startsWith(OUTBOX_PREFIX)) void round()
  }
  if (typeof window !== 'undefined') {
    window.addEventListener('online', onOnline)
    window.addEventListener('storage', onStorage)
  }
  // A store closed (its chat was left) with an intent still undelivered: it is ours now.
  const unsubscribe = onOutboxReleased(() => void round())
  void round()
  return () => {
    stopped = true
    clearTimeout(timer)
    unsubscribe()
    if (typeof window !== 'undefined') {
      window.removeEventListener('online', onOnline)
      window.removeEventListener('storage', onStorage)
    }
  }
}

function localStorageOrNone(): CourierStorage | undefined {
  try {
    return typeof localStorage === 'undefined' ? undefined : localStorage
  } catch {
    return undefined // a SecurityError when storage is disabled
  }
}
