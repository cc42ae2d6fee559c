'use client'
/**
 * The sidebar's data: the signed-in (anonymous) user's sessions, paged newest first, shared
 * by the sidebar, the header and the "new chat" page. A plain store bound with
 * useSyncExternalStore; it only talks to `/api/sessions`, and to the browser's other tabs
 * (sessions-channel.ts): what one tab changes in the list shows in the others at once.
 */
import { useSyncExternalStore } from 'react'
import { A2HttpError, httpErrorOf } from '@/lib/a2/react'
import { listenToOtherTabs, tellOtherTabs, type ListChange } from './sessions-channel'

export { isSessionId } from './session-id'

export interface ChatListItem {
  id: string
  /** Set server-side from the first message; empty until then. */
  title: string | null
  head?: number | null
  createdAt: string
  updatedAt: string
  /** An answer is still being written (server-side: a run not yet settled). */
  generating?: boolean
  /** A call of it may or may not have happened and waits for an operator: it cannot be deleted until that is settled. */
  unresolved?: boolean
  /** Search results: the message text that matched, and its message's id (the chat opens scrolled to it). */
  snippet?: string
  matchId?: string
}

/** A chat deleted a moment ago, still undoable. */
export interface PendingDelete {
  id: string
  title: string
  /** It was open when deleted: undo opens it again. */
  wasOpen: boolean
}

export interface ChatListState {
  sessions: ChatListItem[]
  nextBefore?: string
  status: 'idle' | 'loading' | 'ready' | 'error'
  loadingMore: boolean
  error?: string
  /** Ids the server said are not this user's (or do not exist): the header says so. */
  missing: string[]
  /** The latest delete, while it can still be undone. */
  pendingDelete?: PendingDelete
  /** Chats opened by link that are not in the loaded pages (an old one): their summaries, for the header. */
  opened: Record<string, ChatListItem>
}

async function api<T>(url: string, init?: RequestInit): Promise<T> {
  let response: Response
  try {
    response = await fetch(url, {
      ...init,
      headers: { 'content-type': 'application/json', ...init?.headers },
      credentials: 'same-origin',
      cache: 'no-store',
    })
  } catch (cause) {
    throw new A2HttpError('network', 'Could not reach the server. Check your connection and try again.', { cause })
  }
  const json = (await response.json().catch(() => ({}))) as { error?: { code?: string; message?: string } }
  if (!response.ok) throw httpErrorOf(response, json, `The server answered ${response.status}.`)
  return json as T
}

/** How long a delete can be undone before it is sent. */
export const UNDO_MS = 5_000
/** While a listed chat is generating, the list is re-read this often to see it finish. */
const GENERATING_POLL_MS = 3_000

interface Page {
  sessions: ChatListItem[]
  nextBefore?: string | null
}

const SERVER_SNAPSHOT: ChatListState = { sessions: [], status: 'idle', loadingMore: false, missing: [], opened: {} }

let state: ChatListState = SERVER_SNAPSHOT
let pagesLoaded = 0
/**
 * The first GET. In a fresh browser it also sets the identity cookie, and the list, search and
 * create each mint an identity for a request without one: the last Set-Cookie wins, so a chat
 * created while another request was minting was lost to the browser ("Chat not found"). Every
 * request that may mint waits for it (`identitySettled`). It never rejects.
 */
let firstLoad: Promise<void> | undefined
let refreshing: Promise<void> | undefined
let refreshAgain = false
const listeners = new Set<() => void>()
/** Titles being saved: a list fetched meanwhile must not put the old title back. */
const renaming = new Map<string, string>()

/** Deletes waiting out their undo window: the session and where it was in the list. */
const undoable = new Map<string, { session: ChatListItem; index: number; timer: ReturnType<typeof setTimeout> }>()
/** Deleted (or being deleted): a list fetched meanwhile must not bring them back. */
const deleted = new Set<string>()
let pollTimer: ReturnType<typeof setTimeout> | undefined
const ensuring = new Set<string>()
/** Chats another tab is deleting, in their undo window: where they were, should it be undone there. */
const hiddenByOtherTab = new Map<string, { session: ChatListItem; index: number }>()
let listening = false

/** Another tab changed the list: the same change here, with no request unless it needs one. */
function applyOtherTabs(change: ListChange) {
  if (change.type === 'changed') {
    void chatListStore.refresh()
    return
  }
  const { id } = change
  // This tab's own delete of the same chat, in its window, decides for this tab.
  if (undoable.has(id)) return
  const without = () => state.sessions.filter((s) => s.id !== id)
  switch (change.type) {
    case 'hidden': {
      const index = state.sessions.findIndex((s) => s.id === id)
      const session = state.sessions[index]
      if (session) hiddenByOtherTab.set(id, { session, index })
      deleted.add(id)
      // A header showing it keeps its title (no flash of none, no request) until the delete is final.
      set({ sessions: without(), opened: session ? { ...state.opened, [id]: session } : state.opened })
      return
    }
    case 'restored': {
      const hidden = hiddenByOtherTab.get(id)
      hiddenByOtherTab.delete(id)
      deleted.delete(id)
      if (hidden && !state.sessions.some((s) => s.id === id)) {
        const sessions = [...state.sessions]
        sessions.splice(Math.min(hidden.index, sessions.length), 0, hidden.session)
        set({ sessions: dedupe(sessions) })
      }
      return
    }
    case 'deleted':
      hiddenByOtherTab.delete(id)
      deleted.add(id)
      set({ sessions: without() })
      // The header and an open chat page say it is gone (NotFoundView).
      chatListStore.markMissing(id)
      return
    case 'renamed': {
      const retitle = (s: ChatListItem) => (s.id === id ? { ...s, title: change.title } : s)
      set({
        sessions: state.sessions.map(retitle),
        opened: state.opened[id] ? { ...state.opened, [id]: retitle(state.opened[id]) } : state.opened,
      })
      return
    }
  }
}

function set(patch: Partial<ChatListState>) {
  state = { ...state, ...patch }
  for (const listener of listeners) listener()
  schedulePoll()
}

/** A chat answering elsewhere (another chat open, another tab) ends on the server: re-read the list until none is. */
function schedulePoll() {
  const busy = state.sessions.some((s) => s.generating)
  if (!busy) {
    clearTimeout(pollTimer)
    pollTimer = undefined
    return
  }
  if (pollTimer || typeof document === 'undefined') return
  pollTimer = setTimeout(() => {
    pollTimer = undefined
    if (document.visibilityState === 'visible') void chatListStore.refresh()
    else schedulePoll()
  }, GENERATING_POLL_MS)
}

/** Why a chat stays: a call it made may or may not have happened, and an operator settles that first (the runs page). */
function cannotDeleteYet(session: ChatListItem): string {
  return `“${sessionTitle(session)}” can’t be deleted until its interrupted call is settled: it may or may not have happened (see Runs).`
}

function deleteRequest(id: string, keepalive = false): Promise<unknown> {
  return api(`/api/sessions/${encodeURIComponent(id)}`, { method: 'DELETE', keepalive }).catch((error: unknown) => {
    // Already gone is what we wanted.
    if (error instanceof A2HttpError && error.status === 404) return
    throw error
  })
}

/** The first list has answered (or failed): from here on the browser holds the identity every request uses. */
function identitySettled(): Promise<void> {
  return firstLoad ?? chatListStore.load()
}

/**
 * Runs a tab's first list under a lock the browser's tabs of this origin share (Web Locks). Two
 * fresh tabs opened at once would each mint an identity, and the last Set-Cookie wins: a chat one
 * of them created would belong to the identity that lost (first-visit.spec counts the mints).
 * The second tab's list waits for the first's answer, and its cookie. Uncontended the lock
 * costs a task; where a browser has no Web Locks the list goes at once.
 */
function oneTabAtATime<T>(work: () => Promise<T>): Promise<T> {
  const locks = typeof navigator === 'undefined' ? undefined : (navigator as { locks?: LockManager }).locks
  return locks ? (locks.request('a2.first-list', work) as Promise<T>) : work()
}

function fetchPage(before?: string): Promise<Page> {
  return api<Page>(before ? `/api/sessions?before=${encodeURIComponent(before)}` : '/api/sessions')
}

function dedupe(list: ChatListItem[]): ChatListItem[] {
  const seen = new Set<string>()
  return list
    .filter((s) => !deleted.has(s.id))
    .filter((s) => (seen.has(s.id) ? false : (seen.add(s.id), true)))
    .map((s) => (renaming.has(s.id) ? { ...s, title: renaming.get(s.id)! } : s))
}

/**
 * The server's answer says this chat is not one of ours (400: an id that cannot exist; 401: no
 * identity yet; 403, 404: someone else's or gone). Any other refusal — a 429 or 408 asks to
 * wait — says nothing about the chat: under load a header said "Chat not found" for a chat
 * that was there.
 */
export function meansNoSuchChat(error: unknown): boolean {
  const status = (error as { status?: unknown } | null | undefined)?.status
  return typeof status === 'number' && [400, 401, 403, 404].includes(status)
}

export const chatListStore = {
  subscribe(listener: () => void) {
    listeners.add(listener)
    return () => {
      listeners.delete(listener)
    }
  },
  getSnapshot: () => state,
  getServerSnapshot: () => SERVER_SNAPSHOT,

  /** Loads the first page once (again only after an error). */
  load(): Promise<void> {
    if (!listening) {
      listening = true
      listenToOtherTabs(applyOtherTabs)
    }
    if (firstLoad && state.status !== 'error') return firstLoad
    set({ status: 'loading', error: undefined })
    firstLoad = oneTabAtATime(() => fetchPage()).then(
      (page) => {
        pagesLoaded = 1
        // Keep sessions created meanwhile (optimistic upserts) on top.
        set({
          sessions: dedupe([...state.sessions, ...page.sessions]),
          nextBefore: page.nextBefore ?? undefined,
          status: 'ready',
        })
      },
      (error: unknown) => {
        set({ status: 'error', error: error instanceof Error ? error.message : String(error) })
      },
    )
    return firstLoad
  },

  /** Re-reads the first page (titles, order), keeping older pages already loaded. Coalesced. */
  refresh(): Promise<void> {
    if (!firstLoad) return chatListStore.load()
    if (refreshing) {
      refreshAgain = true
      return refreshing
    }
    refreshing = (async () => {
      await identitySettled()
      do {
        refreshAgain = false
        try {
          const page = await fetchPage()
          const ids = new Set(page.sessions.map((s) => s.id))
          const older = state.sessions.filter((s) => !ids.has(s.id))
          set({
            sessions: dedupe([...page.sessions, ...older]),
            nextBefore: pagesLoaded > 1 ? state.nextBefore : (page.nextBefore ?? undefined),
            status: 'ready',
            error: undefined,
          })
          pagesLoaded = Math.max(pagesLoaded, 1)
        } catch {
          // A failed refresh keeps the list as it was.
        }
      } while (refreshAgain)
      refreshing = undefined
    })()
    return refreshing
  },

  async loadMore(): Promise<void> {
    if (!state.nextBefore || state.loadingMore) return
    set({ loadingMore: true })
    try {
      const page = await fetchPage(state.nextBefore)
      pagesLoaded++
      set({
        sessions: dedupe([...state.sessions, ...page.sessions]),
        nextBefore: page.nextBefore ?? undefined,
        loadingMore: false,
      })
    } catch (error) {
      set({ loadingMore: false, error: error instanceof Error ? error.message : String(error) })
    }
  },

  /** Creates a session and puts it at the top of the list. */
  async create(): Promise<ChatListItem> {
    await identitySettled()
    const { session } = await api<{ session: ChatListItem }>('/api/sessions', { method: 'POST', body: '{}' })
    set({ sessions: dedupe([session, ...state.sessions]) })
    tellOtherTabs({ type: 'changed' })
    return session
  },

  /**
   * This tab changed a chat on the server in a way the list shows (a message that titles it,
   * an answer that marks it generating and moves it up): re-read the list, and have the other
   * tabs do the same.
   */
  changed(): Promise<void> {
    tellOtherTabs({ type: 'changed' })
    return chatListStore.refresh()
  },

  /**
   * Deletes a chat, undoable for UNDO_MS: it leaves the list at once and the server is told
   * when the window ends (the server stops a running answer first). A failure puts it back.
   */
  remove(id: string, options: { wasOpen?: boolean } = {}) {
    if (undoable.has(id)) return
    const index = state.sessions.findIndex((s) => s.id === id)
    const session = state.sessions[index] ?? { id, title: null, createdAt: '', updatedAt: '' }
    // The server would refuse it (409 unresolved): no "deleted, undo" for a chat that stays.
    if (session.unresolved) return set({ error: cannotDeleteYet(session) })
    // A newer delete ends the previous one's undo window: one toast at a time.
    for (const other of [...undoable.keys()]) void chatListStore.commitDelete(other)
    deleted.add(id)
    const timer = setTimeout(() => void chatListStore.commitDelete(id), UNDO_MS)
    undoable.set(id, { session, index: Math.max(index, 0), timer })
    set({
      sessions: state.sessions.filter((s) => s.id !== id),
      pendingDelete: { id, title: sessionTitle(session), wasOpen: options.wasOpen ?? false },
    })
    tellOtherTabs({ type: 'hidden', id })
  },

  /** Takes a delete back, while its undo window is open. Returns whether it could. */
  undo(id: string): boolean {
    const pending = undoable.get(id)
    if (!pending) return false
    clearTimeout(pending.timer)
    undoable.delete(id)
    deleted.delete(id)
    const sessions = [...state.sessions]
    sessions.splice(Math.min(pending.index, sessions.length), 0, pending.session)
    set({ sessions: dedupe(sessions), pendingDelete: state.pendingDelete?.id === id ? undefined : state.pendingDelete })
    tellOtherTabs({ type: 'restored', id })
    return true
  },

  /** Ends a delete's undo window now and tells the server. */
  async commitDelete(id: string): Promise<void> {
    const pending = undoable.get(id)
    if (!pending) return
    clearTimeout(pending.timer)
    undoable.delete(id)
    if (state.pendingDelete?.id === id) set({ pendingDelete: undefined })
    try {
      await deleteRequest(id)
      tellOtherTabs({ type: 'deleted', id })
    } catch (error) {
      tellOtherTabs({ type: 'restored', id })
      deleted.delete(id)
      const sessions = [...state.sessions]
      sessions.splice(Math.min(pending.index, sessions.length), 0, pending.session)
      const reason = error instanceof Error ? error.message : String(error)
      if (error instanceof A2HttpError && error.code === 'unresolved') {
        // The list did not know yet: it does now, so a second try is refused here at once.
        const back = { ...pending.session, unresolved: true }
        set({ sessions: dedupe(sessions.map((s) => (s.id === id ? back : s))), error: cannotDeleteYet(back) })
        return
      }
      set({ sessions: dedupe(sessions), error: `Couldn’t delete “${sessionTitle(pending.session)}”: ${reason}` })
    }
  },

  /** The page is going away: deletes still in their undo window are sent now (keepalive outlives the page). */
  flushDeletes() {
    for (const [id, pending] of undoable) {
      clearTimeout(pending.timer)
      undoable.delete(id)
      void deleteRequest(id, true).catch(() => {})
      tellOtherTabs({ type: 'deleted', id })
    }
  },

  /**
   * A search result as things stand now: gone once deleted (here or in another tab), with the
   * title the list has since (a rename). Results are read once; the list moves on.
   */
  current(result: ChatListItem): ChatListItem | undefined {
    if (deleted.has(result.id)) return undefined
    const known = state.sessions.find((s) => s.id === result.id) ?? state.opened[result.id]
    return known ? { ...result, title: known.title } : result
  },

  /** Chats whose title or messages contain `text` (the server's search; one bounded page). */
  async search(text: string, signal?: AbortSignal): Promise<ChatListItem[]> {
    await identitySettled()
    const { sessions } = await api<{ sessions: ChatListItem[] }>(`/api/sessions?q=${encodeURIComponent(text)}`, { signal })
    return sessions.filter((s) => !deleted.has(s.id))
  },

  /**
   * The summary of a chat opened by link that the loaded pages do not hold (an old chat), so
   * the header can show its title; not ours or gone: marked missing. Once per id.
   */
  async ensure(id: string): Promise<void> {
    if (ensuring.has(id) || state.sessions.some((s) => s.id === id) || state.missing.includes(id)) return
    ensuring.add(id)
    try {
      const { session } = await api<{ session: ChatListItem }>(`/api/sessions/${encodeURIComponent(id)}`)
      set({ opened: { ...state.opened, [id]: session } })
    } catch (error) {
      if (meansNoSuchChat(error)) chatListStore.markMissing(id)
      else ensuring.delete(id) // a network error, a 5xx, a 408 or 429 (wait and ask again): try again on the next visit
    }
  },

  /** The chat page found no such session of ours. */
  markMissing(id: string) {
    if (!state.missing.includes(id)) set({ missing: [...state.missing, id] })
  },

  async rename(id: string, title: string): Promise<void> {
    const previous = state.sessions.find((s) => s.id === id)?.title ?? null
    renaming.set(id, title)
    set({ sessions: dedupe(state.sessions) })
    try {
      const json = await api<{ session?: ChatListItem }>(`/api/sessions/${encodeURIComponent(id)}`, {
        method: 'PATCH',
        body: JSON.stringify({ title }),
      })
      renaming.delete(id)
      if (json.session) set({ sessions: state.sessions.map((s) => (s.id === id ? { ...s, ...json.session } : s)) })
      tellOtherTabs({ type: 'renamed', id, title: json.session?.title ?? title })
    } catch (error) {
      renaming.delete(id)
      set({ sessions: state.sessions.map((s) => (s.id === id ? { ...s, title: previous } : s)) })
      throw error
    }
    void chatListStore.refresh()
  },
}

export function useChatList(): ChatListState {
  return useSyncExternalStore(chatListStore.subscribe, chatListStore.getSnapshot, chatListStore.getServerSnapshot)
}

export function sessionTitle(session: ChatListItem | undefined): string {
  return session?.title?.trim() || 'New chat'
}

/**
 * The first message of a new chat, handed from the "/" page to the chat page across the
 * navigation. sessionStorage survives a full reload of the navigation too; the chat page
 * takes it exactly once.
 */
const FIRST_MESSAGE_KEY = (id: string) => `a2-first-message:${id}`

export function handOffFirstMessage(sessionId: string, text: string) {
  try {
    sessionStorage.setItem(FIRST_MESSAGE_KEY(sessionId), text)
  } catch {
    memoryHandOff.set(sessionId, text)
  }
}

const memoryHandOff = new Map<string, string>()

export function takeFirstMessage(sessionId: string): string | undefined {
  const fromMemory = memoryHandOff.get(sessionId)
  if (fromMemory !== undefined) {
    memoryHandOff.delete(sessionId)
    return fromMemory
  }
  try {
    const text = sessionStorage.getItem(FIRST_MESSAGE_KEY(sessionId))
    if (text === null) return undefined
    sessionStorage.removeItem(FIRST_MESSAGE_KEY(sessionId))
    return text
  } catch {
    return undefined
  }
}

/** Resolves once this browser holds the identity its requests use (an upload waits for it: one minted meanwhile would own the file). */
export function whenIdentitySettled(): Promise<void> {
  return identitySettled()
}
