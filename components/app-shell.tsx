'use client'
import Link from 'next/link'
import { usePathname, useRouter } from 'next/navigation'
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'react'
import { startOutboxCourier } from '@/lib/a2/react'
import { MenuIcon, NewChatIcon, PanelLeftIcon } from './icons'
import { SessionList } from './session-list'
import { isSessionId, chatListStore, sessionTitle, useChatList, type PendingDelete } from './chat-list-store'
import { ThemeToggle } from './theme-toggle'
import { ShareMenu } from './chat/share-menu'
import { useDocumentTitle } from './document-title'
import { touchPrimary } from './chat/touch'

/**
 * The product frame: sidebar (a drawer on narrow screens, collapsible on wide ones),
 * a header with the chat's title and the theme toggle, and the page in <main>.
 * Pages outside the chat (the runs view under /runs) render on their own.
 */
export function AppShell({ children }: { children: React.ReactNode }) {
  const pathname = usePathname() ?? '/'
  const [drawerOpen, setDrawerOpen] = useState(false)
  const [collapsed, setCollapsed] = useState(false)
  const { sessions, missing, pendingDelete, opened, status } = useChatList()
  const menuRef = useRef<HTMLButtonElement>(null)
  const drawerRef = useRef<HTMLElement>(null)

  /** Closes the drawer; `restoreFocus` gives focus back to the button that opened it. */
  const closeDrawer = useCallback((restoreFocus: boolean) => {
    setDrawerOpen(false)
    if (restoreFocus) requestAnimationFrame(() => menuRef.current?.focus())
  }, [])

  // Stops pressed in a chat that is no longer open (left, or its tab closed, while the server
  // was away) are sent from whichever page of the app is open now.
  useEffect(() => startOutboxCourier(), [])

  // Deletes still in their undo window are sent when the page goes away.
  useEffect(() => {
    const flush = () => chatListStore.flushDeletes()
    window.addEventListener('pagehide', flush)
    return () => window.removeEventListener('pagehide', flush)
  }, [])

  // A navigation closes the drawer (focus goes with the new page, not back to the menu).
  useEffect(() => setDrawerOpen(false), [pathname])

  useDrawerFocusTrap(drawerOpen, drawerRef, closeDrawer)

  // "/" and "/c/<id>" only: anything deeper is an unknown route (the bare branded 404).
  const chatPath = /^\/c\/([^/]+)\/?$/.exec(pathname)
  const inShell = pathname === '/' || chatPath !== null
  const activeId = chatPath ? safeDecode(chatPath[1]) : undefined
  const activeSession = activeId ? (sessions.find((s) => s.id === activeId) ?? opened[activeId]) : undefined
  // An id that cannot exist, or one the server said is not ours, is not "New chat"; one not
  // in the loaded pages yet shows nothing until it is.
  const notFound = activeId !== undefined && (!isSessionId(activeId) || missing.includes(activeId))
  const title = !activeId ? 'a2 chat' : notFound ? 'Chat not found' : activeSession ? sessionTitle(activeSession) : ''
  useDocumentTitle(inShell ? (activeId && title ? `${title} · a2 chat` : 'a2 chat') : undefined)

  // A chat opened by link that the first page of the list does not hold: fetch its title.
  const needsSummary = status === 'ready' && activeId !== undefined && !notFound && !activeSession
  useEffect(() => {
    if (needsSummary && activeId) void chatListStore.ensure(activeId)
  }, [needsSummary, activeId])

  if (!inShell) return <>{children}</>

  return (
    <div className="flex h-dvh overflow-hidden">
      <a
        href="#main"
        className="sr-only rounded-lg bg-white px-3 py-2 text-sm font-medium shadow focus:not-sr-only focus:fixed focus:top-2 focus:left-2 focus:z-50 dark:bg-neutral-800"
      >
        Skip to chat
      </a>

      {drawerOpen && (
        <div className="fixed inset-0 z-30 bg-black/40 backdrop-blur-[1px] md:hidden" aria-hidden="true" onClick={() => closeDrawer(true)} />
      )}

      <aside
        ref={drawerRef}
        id="sidebar"
        aria-label="Chat history"
        aria-modal={drawerOpen || undefined}
        role={drawerOpen ? 'dialog' : undefined}
        className={`fixed inset-y-0 left-0 z-40 w-[272px] shrink-0 border-r border-neutral-200 bg-neutral-50 transition-transform duration-200 ease-out md:static md:z-auto md:translate-x-0 dark:border-neutral-800 dark:bg-neutral-950 ${
          // Closed on a narrow screen, its contents are not even laid out: a quarter of the home
          // page's first style and layout on a phone (figure 13, bench/README.md).
          drawerOpen ? 'translate-x-0 shadow-xl' : '-translate-x-full max-md:invisible max-md:[content-visibility:hidden]'
        } ${collapsed ? 'md:hidden' : ''}`}
      >
        <SessionList
          activeId={activeId}
          onClose={() => setDrawerOpen(false)}
          onCloseButton={() => closeDrawer(true)}
          onCollapse={() => setCollapsed(true)}
        />
      </aside>

      {/* Behind the open drawer: out of reach of focus and of screen readers. */}
      <div className="flex min-w-0 flex-1 flex-col" inert={drawerOpen || undefined}>
        <ShellHeader
          menuRef={menuRef}
          drawerOpen={drawerOpen}
          onOpenDrawer={() => setDrawerOpen(true)}
          collapsed={collapsed}
          onExpand={() => setCollapsed(false)}
          title={title}
          shareFor={activeId && activeSession && !notFound ? activeId : undefined}
        />
        <main id="main" tabIndex={-1} className="flex min-h-0 flex-1 flex-col outline-none">
          {children}
        </main>
      </div>
      {pendingDelete && <UndoToast key={pendingDelete.id} pending={pendingDelete} />}
    </div>
  )
}

/**
 * The open drawer is a modal layer: focus moves into it, Tab cycles inside it, and Esc closes it.
 */
function useDrawerFocusTrap(drawerOpen: boolean, drawerRef: React.RefObject<HTMLElement | null>, closeDrawer: (restoreFocus: boolean) => void): void {
  // The open drawer is a modal layer: focus moves into it, Tab cycles inside it, and Esc
  // closes it and nothing else. The listener is on `document`, which sees the key before
  // the chat's window listener (Esc stops the answer): preventDefault tells that one the
  // key was used. A field in the drawer that handles Esc itself (rename) prevents it first.
  useEffect(() => {
    if (!drawerOpen) return
    const drawer = drawerRef.current
    const focusables = () =>
      drawer
        ? [...drawer.querySelectorAll<HTMLElement>('a[href], button:not([disabled]), input:not([disabled]), [tabindex]:not([tabindex="-1"])')].filter(
            (el) => el.getClientRects().length > 0,
          )
        : []
    const first = focusables()[0]
    const closeButton = drawer?.querySelector<HTMLElement>('[data-drawer-close]')
    requestAnimationFrame(() => (closeButton ?? first)?.focus())
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        if (e.defaultPrevented) return
        e.preventDefault()
        closeDrawer(true)
      } else if (e.key === 'Tab') {
        const list = focusables()
        if (list.length === 0) return
        const at = list.indexOf(document.activeElement as HTMLElement)
        const next = e.shiftKey ? (at <= 0 ? list.length - 1 : at - 1) : at === -1 || at === list.length - 1 ? 0 : at + 1
        e.preventDefault()
        list[next].focus()
      }
    }
    document.addEventListener('keydown', onKey)
    return () => document.removeEventListener('keydown', onKey)
  }, [drawerOpen, closeDrawer, drawerRef])
}

/** The header over the page: the drawer's button, New chat, the chat's title, Share and the theme. */
function ShellHeader({
  menuRef,
  drawerOpen,
  onOpenDrawer,
  collapsed,
  onExpand,
  title,
  shareFor,
}: {
  menuRef: React.RefObject<HTMLButtonElement | null>
  drawerOpen: boolean
  onOpenDrawer: () => void
  /** The sidebar is hidden on a wide screen: its buttons show here. */
  collapsed: boolean
  onExpand: () => void
  title: string
  /** The open chat, once it is known to be the reader's: its Share menu shows. */
  shareFor?: string
}) {
  return (
    <header className="flex h-14 shrink-0 items-center gap-1 border-b border-neutral-200/70 px-2 sm:px-3 dark:border-neutral-800/70">
      <button
        ref={menuRef}
        type="button"
        onClick={onOpenDrawer}
        aria-label="Open sidebar"
        aria-controls="sidebar"
        aria-expanded={drawerOpen}
        className="inline-flex size-9 items-center justify-center rounded-lg text-neutral-600 hover:bg-neutral-100 hover:text-neutral-900 md:hidden dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
      >
        <MenuIcon className="size-5" />
      </button>
      {collapsed && (
        <>
          <button
            type="button"
            onClick={onExpand}
            aria-label="Show sidebar"
            aria-controls="sidebar"
            aria-expanded={false}
            title="Show sidebar"
            className="hidden size-9 items-center justify-center rounded-lg text-neutral-600 hover:bg-neutral-100 hover:text-neutral-900 md:inline-flex dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
          >
            <PanelLeftIcon className="size-[18px]" />
          </button>
          <Link
            href="/"
            aria-label="New chat"
            title="New chat"
            className="hidden size-9 items-center justify-center rounded-lg text-neutral-600 hover:bg-neutral-100 hover:text-neutral-900 md:inline-flex dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
          >
            <NewChatIcon className="size-[18px]" />
          </Link>
        </>
      )}
      <p
        data-testid="chat-title"
        className="min-w-0 flex-1 truncate px-2 text-[15px] font-medium text-neutral-800 dark:text-neutral-200"
        title={title}
      >
        {title}
      </p>
      <Link
        href="/"
        aria-label="New chat"
        className="inline-flex size-9 items-center justify-center rounded-lg text-neutral-600 hover:bg-neutral-100 hover:text-neutral-900 md:hidden dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
      >
        <NewChatIcon className="size-[18px]" />
      </Link>
      {shareFor && <ShareMenu key={shareFor} sessionId={shareFor} />}
      <ThemeToggle />
    </header>
  )
}

/** "Chat deleted · Undo", while the delete can be taken back. Takes focus, so Enter undoes. */
function UndoToast({ pending }: { pending: PendingDelete }) {
  const router = useRouter()
  const pathname = usePathname()
  const undoRef = useRef<HTMLButtonElement>(null)
  const shownAt = useRef(pathname)
  useEffect(() => {
    undoRef.current?.focus()
  }, [])
  // The toast leaves with focus on it: put focus somewhere useful, not on <body>. A layout
  // effect: its cleanup runs while the button is still in the document (a passive one's ran
  // after, when focus had already fallen to <body>). The composer on a desktop; on a touch
  // screen the page's main region, as focusing the composer opens the on-screen keyboard.
  useLayoutEffect(() => {
    const undo = undoRef.current
    return () => {
      if (!undo || document.activeElement !== undo) return
      const next = touchPrimary() ? document.getElementById('main') : document.getElementById('composer-input')
      next?.focus({ preventScroll: true })
    }
  }, [])
  // Deleting the open chat goes to "/", whose composer takes focus as it mounts, after the
  // toast took it: the toast takes it back, once, for that navigation (else Enter undoes nothing).
  useEffect(() => {
    if (!pending.wasOpen || pathname === shownAt.current) return
    shownAt.current = pathname
    if (pathname === '/') undoRef.current?.focus()
  }, [pending.wasOpen, pathname])
  return (
    <div
      data-testid="undo-toast"
      role="status"
      className="fixed bottom-24 left-1/2 z-50 flex max-w-[calc(100vw-2rem)] -translate-x-1/2 items-center gap-3 rounded-xl bg-neutral-900 py-2 pr-2 pl-4 text-sm text-white shadow-lg dark:bg-neutral-100 dark:text-neutral-900"
    >
      <span className="min-w-0 truncate">
        Deleted “<span className="font-medium">{pending.title}</span>”
      </span>
      <button
        ref={undoRef}
        type="button"
        onClick={() => {
          if (chatListStore.undo(pending.id) && pending.wasOpen) router.push(`/c/${encodeURIComponent(pending.id)}`)
        }}
        className="shrink-0 rounded-lg px-2.5 py-1 font-semibold text-sky-300 hover:bg-white/10 focus-visible:outline-2 focus-visible:outline-sky-300 dark:text-sky-700 dark:hover:bg-neutral-900/10 dark:focus-visible:outline-sky-700"
      >
        Undo
      </button>
    </div>
  )
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value)
  } catch {
    return value
  }
}
