'use client'
import Link from 'next/link'
import { usePathname } from 'next/navigation'
import { useEffect, useRef, useState } from 'react'
import { ActivityIcon, NewChatIcon, PanelLeftIcon, PencilIcon, SpinnerIcon, XIcon } from './icons'
import { sessionsStore, sessionTitle, useSessions, type SessionSummary } from './sessions-store'

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
  const { sessions, status, nextBefore, loadingMore, error } = useSessions()
  const pathname = usePathname()

  useEffect(() => {
    void sessionsStore.load()
    const onVisible = () => {
      if (document.visibilityState === 'visible') void sessionsStore.refresh()
    }
    document.addEventListener('visibilitychange', onVisible)
    return () => document.removeEventListener('visibilitychange', onVisible)
  }, [])

  const groups = groupByAge(sessions)

  return (
    <div className="flex h-full flex-col">
      <div className="flex h-14 shrink-0 items-center justify-between px-3">
        <Link
          href="/"
          className="flex items-center gap-2 rounded-lg px-2 py-1 text-[15px] font-semibold tracking-tight"
          aria-label="a2 chat home"
        >
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

      <div className="px-3 pb-2">
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
      </div>

      <nav aria-label="Chats" className="min-h-0 flex-1 overflow-y-auto px-3 pb-3">
        {status === 'loading' && sessions.length === 0 ? (
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
              onClick={() => void sessionsStore.load()}
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
                  <SessionItem key={session.id} session={session} active={session.id === activeId} onNavigate={onClose} />
                ))}
              </ul>
            </section>
          ))
        )}

        {nextBefore && sessions.length > 0 && (
          <button
            type="button"
            onClick={() => void sessionsStore.loadMore()}
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
      </nav>

      <div className="shrink-0 border-t border-neutral-200 px-3 py-2 dark:border-neutral-800">
        <Link
          href="/runs"
          prefetch={false}
          className="flex items-center gap-2.5 rounded-lg px-2 py-2 text-sm text-neutral-600 hover:bg-neutral-200/70 hover:text-neutral-900 dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
        >
          <ActivityIcon className="size-4" />
          Runs (operator view)
        </Link>
        <Link
          href="/notes"
          prefetch={false}
          className="flex items-center gap-2.5 rounded-lg px-2 py-2 text-sm text-neutral-600 hover:bg-neutral-200/70 hover:text-neutral-900 dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
        >
          <span aria-hidden="true" className="inline-block size-4 text-center leading-4">✎</span>
          Saved notes
        </Link>
      </div>
    </div>
  )
}

function SessionItem({ session, active, onNavigate }: { session: SessionSummary; active: boolean; onNavigate: () => void }) {
  const [editing, setEditing] = useState(false)
  const [draft, setDraft] = useState('')
  const [failed, setFailed] = useState(false)
  const inputRef = useRef<HTMLInputElement>(null)
  const title = sessionTitle(session)

  useEffect(() => {
    if (editing) inputRef.current?.select()
  }, [editing])

  const commit = async () => {
    const next = draft.trim()
    setEditing(false)
    if (!next || next === session.title) return
    try {
      await sessionsStore.rename(session.id, next)
      setFailed(false)
    } catch {
      setFailed(true)
    }
  }

  if (editing) {
    return (
      <li>
        <form
          onSubmit={(e) => {
            e.preventDefault()
            void commit()
          }}
        >
          <label className="sr-only" htmlFor={`rename-${session.id}`}>
            Rename chat
          </label>
          <input
            ref={inputRef}
            id={`rename-${session.id}`}
            value={draft}
            maxLength={200}
            onChange={(e) => setDraft(e.target.value)}
            onBlur={() => void commit()}
            onKeyDown={(e) => {
              if (e.key === 'Escape') {
                e.preventDefault()
                e.stopPropagation()
                setEditing(false)
              }
            }}
            className="w-full rounded-lg border border-blue-500 bg-white px-2 py-1.5 text-sm outline-none dark:bg-neutral-900"
          />
        </form>
      </li>
    )
  }

  return (
    <li className="group relative">
      <Link
        href={`/c/${encodeURIComponent(session.id)}`}
        data-testid="session-item"
        data-session-id={session.id}
        aria-current={active ? 'page' : undefined}
        onClick={onNavigate}
        title={title}
        className={`block truncate rounded-lg py-2 pr-9 pl-2 text-sm transition ${
          active
            ? 'bg-neutral-200/80 font-medium text-neutral-900 dark:bg-neutral-800 dark:text-neutral-50'
            : 'text-neutral-700 hover:bg-neutral-200/50 dark:text-neutral-300 dark:hover:bg-neutral-800/60'
        }`}
      >
        {title}
        {failed && <span className="sr-only"> (rename failed)</span>}
      </Link>
      <button
        type="button"
        onClick={() => {
          setDraft(session.title ?? '')
          setEditing(true)
        }}
        aria-label={`Rename “${title}”`}
        title={failed ? 'Rename failed — try again' : 'Rename'}
        className={`absolute top-1/2 right-1 inline-flex size-7 -translate-y-1/2 items-center justify-center rounded-md text-neutral-500 opacity-0 transition group-hover:opacity-100 hover:bg-neutral-300/60 hover:text-neutral-900 focus-visible:opacity-100 dark:text-neutral-400 dark:hover:bg-neutral-700 dark:hover:text-neutral-100 ${
          active || failed ? 'opacity-100' : ''
        } ${failed ? 'text-red-600 dark:text-red-400' : ''}`}
      >
        <PencilIcon className="size-3.5" />
      </button>
    </li>
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
  sessions: SessionSummary[]
}

/** Consecutive runs of sessions by age of their last activity, in the server's order. */
function groupByAge(sessions: SessionSummary[]): Group[] {
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
