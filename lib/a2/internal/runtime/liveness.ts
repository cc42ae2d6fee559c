/**
 * Liveness: how a worker learns within a second that another process died, instead of
 * after its lease. Each process holds one lock per store for as long as it lives (on
 * Postgres an advisory lock on a connection of its own, released by Postgres the moment a
 * killed process's socket closes; on PGlite, whose database one process owns, a key in that
 * process). Every claim records the owner's key; the drain releases runs whose owner's key
 * is no longer held (OWNER_DIED), and they are claimed through the same fenced path as a
 * lapsed lease. A process that is alive but slow or cut off still holds its lock: only its
 * lease can take its runs away.
 */
import { randomInt } from 'node:crypto'
import type { SQL } from 'drizzle-orm'
import type { LifeLock, Store } from '../store/store'

export interface Liveness {
  /** This process's key, written into every claim it makes. */
  readonly key: number
  /** SQL true when the owner of `ownerKey` is gone. */
  ownerGone(ownerKey: SQL): SQL
  /**
   * May this process judge others dead? Only once its own lock has been held for
   * LIVENESS_SETTLE_MS: after a Postgres restart every lock is gone at once, and each
   * process needs a moment (its next check, ≤ 500 ms, and a reconnect) to take its own
   * again — nobody must be declared dead meanwhile.
   */
  trusted(): boolean
  /**
   * Is this process's lock held now? Not while its connection is being taken again (a
   * Postgres restart, a killed backend): a claim made then records a key others may find
   * missing, so the worker claims nothing meanwhile.
   */
  held?(): boolean
  /** Gives this holder's share back; the lock is let go when the process's last worker on the store stops. */
  release(): Promise<void>
}

export const LIVENESS_SETTLE_MS = 3_000

interface Held {
  lock: Promise<{ key: number; lock: LifeLock } | undefined>
  holders: number
}

const byStore = new WeakMap<Store, Held>()

/**
 * The process's liveness on this store, shared by its workers (taken by the first, let go
 * after the last); undefined when the store has none (leases alone decide).
 */
export async function livenessFor(store: Store): Promise<Liveness | undefined> {
  if (!store.holdLifeLock || !store.ownerGone) return undefined
  let held = byStore.get(store)
  if (!held) {
    held = { lock: take(store), holders: 0 }
    byStore.set(store, held)
  }
  held.holders++
  const taken = await held.lock
  const share = held
  let released = false
  const release = async () => {
    if (released) return
    released = true
    if (--share.holders > 0) return
    if (byStore.get(store) === share) byStore.delete(store)
    await taken?.lock.release()
  }
  if (!taken) {
    await release()
    return undefined
  }
  const ownerGone = store.ownerGone.bind(store)
  return {
    key: taken.key,
    ownerGone,
    trusted: () => store.kind === 'pglite' || (taken.lock.heldForMs() ?? 0) >= LIVENESS_SETTLE_MS,
    held: () => store.kind === 'pglite' || taken.lock.heldForMs() !== undefined,
    release,
  }
}

async function take(store: Store): Promise<{ key: number; lock: LifeLock } | undefined> {
  // A random positive int4: two live processes picking the same key is a 1-in-2^31 event,
  // and even then the second one's try-lock fails and it picks again.
  for (let tries = 0; tries < 5; tries++) {
    const key = randomInt(1, 2 ** 31 - 1)
    const lock = await store.holdLifeLock!(key)
    if (lock) return { key, lock }
  }
  return undefined
}
