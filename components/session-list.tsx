'use client'
import Link from 'next/link'
import { usePathname, useRouter } from 'next/navigation'
import { useEffect, useRef, useState } from 'react'
import { ActivityIcon, NewChatIcon, PanelLeftIcon, PencilIcon, SearchIcon, SpinnerIcon, TrashIcon, XIcon } from './icons'
import { chatListStore, sessionTitle, useChatList, type ChatListItem } from './chat-list-store'
import dynamic from 'next/dynamic'
import { AccountLinkView } from './account-link'

/**
 * The account's link, once better-auth's client (with its passkey plugin, ~50 KB) has loaded
 * after the page: until then, and for a guest, it reads "Sign in", as it did while the session
 * was asked for.
 */
const AccountLink = dynamic(() => import('./account-session').then((m) => m.AccountSessionLink), {
  ssr: false,
  loading: () => <AccountLinkView />,
})

/** Asks the "/" page's composer to take focus (New chat while already on "/"). */
export const FOCUS_COMPOSER_EVENT = 'a2:focus-composer'

interface SessionListProps {
  activeId?: string
  /** Closes the drawer on narrow screens (a navigation: focus goes with the page). */
  onClose: () => void
  /** The drawer's close button: focus goes back to the button that opened it. */
  onCloseButton: () => void
  /** Hides the sidebar on wide screens. */
  onCollapse: () => void
}

export function SessionList({ activeId, onClose, onCloseButton, onCollapse }: SessionListProps) {
  useEffect(() => {
    // A task after hydration's effects, not in theirs: loading changes the list's store, and a
    // store's change re-renders synchronously, which made that task one a phone could not split.
    const firstLoad = setTimeout(() => void chatListStore.load(), 0)
    const onVisible = () => {
      if (document.visibilityState === 'visible') void chatListStore.refresh()
    }
    document.addEventListener('visibilitychange', onVisible)
    return () => {
      clearTimeout(firstLoad)
      document.removeEventListener('visibilitychange', onVisible)
    }
  }, [])

  const search = useSearch()

  return (
    <div className="flex h-full flex-col">
      <SidebarTop onCollapse={onCollapse} onCloseButton={onCloseButton} />
      <div className="px-3 pb-2">
        <NewChatLink onClose={onClose} />
        <SearchBox search={search} />
      </div>
      <nav aria-label="Chats" className="min-h-0 flex-1 overflow-y-auto px-3 pb-3">
        <ChatListBody
          activeId={activeId}
          onNavigate={onClose}
          searchResults={search.active ? <SearchResults search={search} activeId={activeId} onNavigate={onClose} /> : undefined}
        />
      </nav>
      <SidebarLinks />
    </div>
  )
}

/** The logo, and the buttons that hide the sidebar (wide screens) or close the drawer (narrow ones). */
function SidebarTop({ onCollapse, onCloseButton }: { onCollapse: () => void; onCloseButton: () => void }) {
  return (
    <div className="flex h-14 shrink-0 items-center justify-between px-3">
      <Link href="/" className="flex items-center gap-2 rounded-lg px-2 py-1 text-[15px] font-semibold tracking-tight">
        <Logo />
        a2 chat
      </Link>
      <button
        type="button"
        onClick={onCollapse}
        className="hidden size-9 items-center justify-center rounded-lg text-neutral-500 hover:bg-neutral-200/70 hover:text-neutral-900 md:inline-flex dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
        aria-label="Hide sidebar"
        title="Hide sidebar"
      >
        <PanelLeftIcon className="size-[18px]" />
      </button>
      <button
        type="button"
        data-drawer-close
        onClick={onCloseButton}
        className="inline-flex size-9 items-center justify-center rounded-lg text-neutral-500 hover:bg-neutral-200/70 hover:text-neutral-900 md:hidden dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
        aria-label="Close sidebar"
      >
        <XIcon className="size-[18px]" />
      </button>
    </div>
  )
}

function NewChatLink({ onClose }: { onClose: () => void }) {
  const pathname = usePathname()
  return (
    <Link
      href="/"
      data-testid="new-chat"
      onClick={() => {
        if (pathname === '/') window.dispatchEvent(new Event(FOCUS_COMPOSER_EVENT))
        onClose()
      }}
      className="flex w-full items-center gap-2.5 rounded-lg border border-neutral-200 bg-white px-3 py-2 text-sm font-medium shadow-xs transition hover:bg-neutral-50 dark:border-neutral-700 dark:bg-neutral-900 dark:hover:bg-neutral-800"
    >
      <NewChatIcon className="size-4" />
      New chat
    </Link>
  )
}

function SearchBox({ search }: { search: SearchState }) {
  return (
    <div role="search" className="relative mt-2">
      <SearchIcon className="pointer-events-none absolute top-1/2 left-2.5 size-4 -translate-y-1/2 text-neutral-400 dark:text-neutral-500" />
      <input
        type="search"
        aria-label="Search chats"
        placeholder="Search chats"
        value={search.query}
        maxLength={200}
        onChange={(e) => search.setQuery(e.target.value)}
        onKeyDown={(e) => {
          // Esc clears the search first; only an empty box lets it through (to close the drawer).
          if (e.key === 'Escape' && search.query) {
            e.preventDefault()
            search.setQuery('')
          }
        }}
        className="w-full rounded-lg border border-transparent bg-neutral-200/60 py-1.5 pr-2 pl-8 text-sm outline-none placeholder:text-neutral-500 focus:border-neutral-300 focus:bg-white dark:bg-neutral-800/70 dark:placeholder:text-neutral-400 dark:focus:border-neutral-600 dark:focus:bg-neutral-900 [&::-webkit-search-cancel-button]:hidden"
      />
    </div>
  )
}

/**
 * The reader's chats by age (or a search's results in their place), a placeholder while the
 * first page loads, Load more and the list's errors.
 */
function ChatListBody({ activeId, onNavigate, searchResults }: { activeId?: string; onNavigate: () => void; searchResults?: React.ReactNode }) {
  const { sessions, status, nextBefore, loadingMore, error } = useChatList()
  const groups = groupByAge(sessions)
  return (
    <>
      {searchResults ? (
        searchResults
      ) : (status === 'idle' || status === 'loading') && sessions.length === 0 ? (
        // Not loaded yet (idle: the server's render, before the first list): not "No chats yet".
        <ul aria-hidden="true" className="mt-3 space-y-2 px-2">
          {[70, 85, 55, 75].map((w, i) => (
            <li key={i} className="h-4 animate-pulse rounded bg-neutral-200 dark:bg-neutral-800" style={{ width: `${w}%` }} />
          ))}
        </ul>
      ) : status === 'error' && sessions.length === 0 ? (
        <div className="mt-3 px-2 text-sm text-neutral-500 dark:text-neutral-400">
          <p>Couldn’t load your chats.</p>
          <button
            type="button"
            onClick={() => void chatListStore.load()}
            className="mt-1 font-medium text-neutral-900 underline underline-offset-2 dark:text-neutral-100"
          >
            Try again
          </button>
        </div>
      ) : sessions.length === 0 ? (
        <p className="mt-3 px-2 text-sm text-neutral-500 dark:text-neutral-400">No chats yet. Your conversations will appear here.</p>
      ) : (
        groups.map((group) => (
          <section key={group.key} aria-labelledby={`group-${group.key}`} className="mt-3 first:mt-1">
            <h2 id={`group-${group.key}`} className="px-2 pb-1 text-xs font-medium text-neutral-500 dark:text-neutral-400">
              {group.label}
            </h2>
            <ul className="space-y-0.5">
              {group.sessions.map((session) => (
                <SessionItem key={session.id} session={session} active={session.id === activeId} onNavigate={onNavigate} />
              ))}
            </ul>
          </section>
        ))
      )}

      {nextBefore && sessions.length > 0 && (
        <button
          type="button"
          onClick={() => void chatListStore.loadMore()}
          disabled={loadingMore}
          className="mt-2 flex w-full items-center justify-center gap-2 rounded-lg px-2 py-1.5 text-sm text-neutral-600 hover:bg-neutral-200/70 disabled:opacity-60 dark:text-neutral-400 dark:hover:bg-neutral-800"
        >
          {loadingMore && <SpinnerIcon className="size-3.5" />}
          {loadingMore ? 'Loading…' : 'Load more'}
        </button>
      )}
      {error && status !== 'error' && (
        <p role="status" className="mt-2 px-2 text-xs text-red-600 dark:text-red-400">
          {error}
        </p>
      )}
    </>
  )
}

/** Runs, Saved notes and the account, under the list. */
function SidebarLinks() {
  return (
    <div className="shrink-0 border-t border-neutral-200 px-3 py-2 dark:border-neutral-800">
      <Link
        href="/runs"
        prefetch={false}
        className="flex items-center gap-2.5 rounded-lg px-2 py-2 text-sm text-neutral-600 hover:bg-neutral-200/70 hover:text-neutral-900 dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
      >
        <ActivityIcon className="size-4" />
        Runs
      </Link>
      <Link
        href="/notes"
        prefetch={false}
        className="flex items-center gap-2.5 rounded-lg px-2 py-2 text-sm text-neutral-600 hover:bg-neutral-200/70 hover:text-neutral-900 dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
      >
        <span aria-hidden="true" className="inline-block size-4 text-center leading-4">
          ✎
        </span>
        Saved notes
      </Link>
      <AccountLink />
    </div>
  )
}

interface SearchState {
  query: string
  setQuery: (query: string) => void
  /** A query is typed: results replace the list. */
  active: boolean
  results?: { for: string; sessions: ChatListItem[] }
  error?: string
}

/** The sidebar's search: the server's, 200 ms after typing stops, the previous request cancelled. */
function useSearch(): SearchState {
  const [query, setQuery] = useState('')
  const [results, setResults] = useState<SearchState['results']>()
  const [error, setError] = useState<string>()
  const text = query.trim()
  useEffect(() => {
    if (!text) {
      setResults(undefined)
      setError(undefined)
      return
    }
    const controller = new AbortController()
    const timer = setTimeout(() => {
      chatListStore.search(text, controller.signal).then(
        (sessions) => {
          setResults({ for: text, sessions })
          setError(undefined)
        },
        (e: unknown) => {
          if (!controller.signal.aborted) setError(e instanceof Error ? e.message : String(e))
        },
      )
    }, 200)
    return () => {
      clearTimeout(timer)
      controller.abort()
    }
  }, [text])
  return { query, setQuery, active: text.length > 0, results, error }
}

function SearchResults({ search, activeId, onNavigate }: { search: SearchState; activeId?: string; onNavigate: () => void }) {
  const { results: found, error } = search
  // Renamed or deleted since (in this tab or another): as the list has it now.
  const results = found && { ...found, sessions: found.sessions.flatMap((s) => chatListStore.current(s) ?? []) }
  if (error) return <p className="mt-3 px-2 text-sm text-red-600 dark:text-red-400">Couldn’t search: {error}</p>
  if (!results) {
    return (
      <p className="mt-3 flex items-center gap-2 px-2 text-sm text-neutral-500 dark:text-neutral-400">
        <SpinnerIcon className="size-3.5" /> Searching…
      </p>
    )
  }
  return (
    <section aria-label="Search results" className="mt-2">
      <p role="status" className="px-2 pb-1 text-xs font-medium text-neutral-500 dark:text-neutral-400">
        {results.sessions.length === 0
          ? `No chats match “${results.for}”`
          : `${results.sessions.length === 30 ? 'First 30' : results.sessions.length} ${results.sessions.length === 1 ? 'chat' : 'chats'} found`}
      </p>
      <ul className="space-y-0.5">
        {results.sessions.map((session) => (
          <li key={session.id}>
            <Link
              href={`/c/${encodeURIComponent(session.id)}${session.matchId ? `?turn=${encodeURIComponent(session.matchId)}` : ''}`}
              data-testid="search-result"
              data-session-id={session.id}
              aria-current={session.id === activeId ? 'page' : undefined}
              onClick={onNavigate}
              className="block rounded-lg px-2 py-2 text-sm text-neutral-700 hover:bg-neutral-200/50 aria-[current=page]:bg-neutral-200/80 dark:text-neutral-300 dark:hover:bg-neutral-800/60 dark:aria-[current=page]:bg-neutral-800"
            >
              <span className="block truncate font-medium text-neutral-900 dark:text-neutral-100">{sessionTitle(session)}</span>
              {session.snippet && <span className="mt-0.5 line-clamp-2 block text-xs text-neutral-500 dark:text-neutral-400">{session.snippet}</span>}
            </Link>
          </li>
        ))}
      </ul>
    </section>
  )
}

function SessionItem({ session, active, onNavigate }: { session: ChatListItem; active: boolean; onNavigate: () => void }) {
  const router = useRouter()
  const [editing, setEditing] = useState(false)
  const [draft, setDraft] = useState('')
  const [failed, setFailed] = useState(false)
  const inputRef = useRef<HTMLInputElement>(null)
  const renameButtonRef = useRef<HTMLButtonElement>(null)
  // Set when the field is left with Enter or Esc: its element goes away with focus on it, and
  // focus goes back to Rename instead of to <body>. Left by a click elsewhere, focus stays there.
  const refocusRename = useRef(false)
  const title = sessionTitle(session)

  useEffect(() => {
    if (editing) inputRef.current?.select()
    else if (refocusRename.current) {
      refocusRename.current = false
      renameButtonRef.current?.focus()
    }
  }, [editing])

  const commit = async () => {
    const next = draft.trim()
    setEditing(false)
    if (!next || next === session.title) return
    try {
      await chatListStore.rename(session.id, next)
      setFailed(false)
    } catch {
      setFailed(true)
    }
  }

  if (editing) {
    return (
      <li>
        <RenameField
          sessionId={session.id}
          inputRef={inputRef}
          draft={draft}
          setDraft={setDraft}
          onSubmit={() => {
            refocusRename.current = true
            void commit()
          }}
          onBlur={() => void commit()}
          onEscape={() => {
            refocusRename.current = true
            setEditing(false)
          }}
        />
      </li>
    )
  }

  return (
    <li className="group relative">
      <SessionLink session={session} title={title} active={active} failed={failed} onNavigate={onNavigate} />
      {/* Rename and Delete show on hover with a mouse; a phone (the drawer, below md) has no
          hover, so there they always show. */}
      <button
        ref={renameButtonRef}
        type="button"
        onClick={() => {
          setDraft(session.title ?? '')
          setEditing(true)
        }}
        aria-label={`Rename “${title}”`}
        title={failed ? 'Rename failed — try again' : 'Rename'}
        className={`absolute top-1/2 right-8 inline-flex size-7 -translate-y-1/2 items-center justify-center rounded-md text-neutral-500 opacity-0 transition group-hover:opacity-100 hover:bg-neutral-300/60 max-md:opacity-100 hover:text-neutral-900 focus-visible:opacity-100 dark:text-neutral-400 dark:hover:bg-neutral-700 dark:hover:text-neutral-100 ${
          active || failed ? 'opacity-100' : ''
        } ${failed ? 'text-red-600 dark:text-red-400' : ''}`}
      >
        <PencilIcon className="size-3.5" />
      </button>
      <button
        type="button"
        data-testid="delete-chat"
        onClick={() => {
          chatListStore.remove(session.id, { wasOpen: active })
          if (active) router.push('/')
        }}
        aria-label={`Delete “${title}”`}
        title="Delete"
        className={`absolute top-1/2 right-1 inline-flex size-7 -translate-y-1/2 items-center justify-center rounded-md text-neutral-500 opacity-0 transition group-hover:opacity-100 hover:bg-neutral-300/60 max-md:opacity-100 hover:text-red-700 focus-visible:opacity-100 dark:text-neutral-400 dark:hover:bg-neutral-700 dark:hover:text-red-300 ${
          active ? 'opacity-100' : ''
        }`}
      >
        <TrashIcon className="size-3.5" />
      </button>
    </li>
  )
}

/** A chat's title as a field: Enter renames, Esc leaves it as it was, leaving the field renames. */
function RenameField({
  sessionId,
  inputRef,
  draft,
  setDraft,
  onSubmit,
  onBlur,
  onEscape,
}: {
  sessionId: string
  inputRef: React.RefObject<HTMLInputElement | null>
  draft: string
  setDraft: (draft: string) => void
  onSubmit: () => void
  onBlur: () => void
  onEscape: () => void
}) {
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault()
        onSubmit()
      }}
    >
      <label className="sr-only" htmlFor={`rename-${sessionId}`}>
        Rename chat
      </label>
      <input
        ref={inputRef}
        id={`rename-${sessionId}`}
        value={draft}
        maxLength={200}
        onChange={(e) => setDraft(e.target.value)}
        onBlur={onBlur}
        onKeyDown={(e) => {
          if (e.key === 'Escape') {
            e.preventDefault()
            e.stopPropagation()
            onEscape()
          }
        }}
        className="w-full rounded-lg border border-blue-500 bg-white px-2 py-1.5 text-sm outline-none dark:bg-neutral-900"
      />
    </form>
  )
}

function SessionLink({
  session,
  title,
  active,
  failed,
  onNavigate,
}: {
  session: ChatListItem
  title: string
  active: boolean
  /** The last rename failed. */
  failed: boolean
  onNavigate: () => void
}) {
  return (
    <Link
      href={`/c/${encodeURIComponent(session.id)}`}
      prefetch={false}
      data-testid="session-item"
      data-session-id={session.id}
      aria-current={active ? 'page' : undefined}
      onClick={onNavigate}
      title={title}
      data-generating={String(session.generating === true)}
      className={`block truncate rounded-lg py-2 pr-16 pl-2 text-sm transition ${
        active
          ? 'bg-neutral-200/80 font-medium text-neutral-900 dark:bg-neutral-800 dark:text-neutral-50'
          : 'text-neutral-700 hover:bg-neutral-200/50 dark:text-neutral-300 dark:hover:bg-neutral-800/60'
      }`}
    >
      {session.generating && (
        <span title="Generating an answer" className="mr-1.5 inline-flex size-2 animate-pulse rounded-full bg-emerald-500 align-middle">
          <span className="sr-only">Generating: </span>
        </span>
      )}
      {title}
      {failed && <span className="sr-only"> (rename failed)</span>}
    </Link>
  )
}

export function Logo({ className = 'size-6' }: { className?: string }) {
  return (
    <span
      aria-hidden="true"
      className={`inline-flex items-center justify-center rounded-md bg-neutral-900 text-[11px] font-bold text-white dark:bg-white dark:text-neutral-900 ${className}`}
    >
      a2
    </span>
  )
}

interface Group {
  key: string
  label: string
  sessions: ChatListItem[]
}

/** Consecutive runs of sessions by age of their last activity, in the server's order. */
function groupByAge(sessions: ChatListItem[]): Group[] {
  const now = new Date()
  const startOfToday = new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime()
  const day = 86_400_000
  const bucket = (iso: string): [string, string] => {
    const t = new Date(iso).getTime()
    if (Number.isNaN(t) || t >= startOfToday) return ['today', 'Today']
    if (t >= startOfToday - day) return ['yesterday', 'Yesterday']
    if (t >= startOfToday - 7 * day) return ['week', 'Previous 7 days']
    if (t >= startOfToday - 30 * day) return ['month', 'Previous 30 days']
    return ['older', 'Older']
  }
  const groups: Group[] = []
  for (const session of sessions) {
    const [key, label] = bucket(session.updatedAt ?? session.createdAt)
    const last = groups[groups.length - 1]
    if (last && last.label === label) last.sessions.push(session)
    else groups.push({ key: `${key}-${groups.length}`, label, sessions: [session] })
  }
  return groups
}
