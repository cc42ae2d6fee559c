'use client'
/**
 * a2 — the React door: `useSession`, a thin hook over the plain session store.
 */
import { useEffect, useState, useSyncExternalStore } from 'react'
import {
  createSessionStore,
  type SessionStoreOptions,
  type SessionSnapshot,
  type SessionStore,
  type PushInput,
} from './internal/browser/session-store'

export { createSessionStore, clientEventId, PushError } from './internal/browser/session-store'
export { startOutboxCourier, type OutboxCourierOptions, type CourierStorage } from './internal/browser/outbox-courier'
// The browser's side needs these two of the root door's: from here, without the contracts (and zod) it also holds.
export { A2HttpError, httpErrorOf } from './internal/core/http-error'
export type { SessionSnapshot, SessionStore, PushInput, Connection, OutboxEntry, OutboxStorage } from './internal/browser/session-store'

/** One store per mounted session: give the component `key={sessionId}` to switch sessions. */
export function useSession<S>(
  sessionId: string,
  options: Omit<SessionStoreOptions<S>, 'sessionId'>,
): SessionSnapshot<S> & { push: SessionStore<S>['push']; store: SessionStore<S> } {
  const [store] = useState(() => createSessionStore({ ...options, sessionId }))
  useEffect(() => {
    store.connect()
    return () => store.close()
  }, [store])
  const snapshot = useSyncExternalStore(store.subscribe, store.getSnapshot, store.getServerSnapshot)
  return { ...snapshot, push: store.push, store }
}

export type { PushInput as SessionPush }
