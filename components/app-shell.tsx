'use client'
import Link from 'next/link'
import { usePathname } from 'next/navigation'
import { useEffect, useState } from 'react'
import { MenuIcon, NewChatIcon, PanelLeftIcon } from './icons'
import { SessionList } from './session-list'
import { sessionTitle, useSessions } from './sessions-store'
import { ThemeToggle } from './theme-toggle'

/**
 * The product frame: sidebar (a drawer on narrow screens, collapsible on wide ones),
 * a header with the chat's title and the theme toggle, and the page in <main>.
 * Pages outside the chat (the runs view under /runs) render on their own.
 */
export function AppShell({ children }: { children: React.ReactNode }) {
  const pathname = usePathname() ?? '/'
  const [drawerOpen, setDrawerOpen] = useState(false)
  const [collapsed, setCollapsed] = useState(false)
  const { sessions } = useSessions()

  // A navigation closes the drawer.
  useEffect(() => setDrawerOpen(false), [pathname])

  // Escape closes the drawer.
  useEffect(() => {
    if (!drawerOpen) return
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') setDrawerOpen(false)
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [drawerOpen])

  if (!pathname.startsWith('/c/') && pathname !== '/') return <>{children}</>

  const activeId = pathname.startsWith('/c/') ? safeDecode(pathname.slice(3).split('/')[0]) : undefined
  const title = activeId ? sessionTitle(sessions.find((s) => s.id === activeId)) : 'a2 chat'

  return (
    <div className="flex h-dvh overflow-hidden">
      <a
        href="#main"
        className="sr-only rounded-lg bg-white px-3 py-2 text-sm font-medium shadow focus:not-sr-only focus:fixed focus:top-2 focus:left-2 focus:z-50 dark:bg-neutral-800"
      >
        Skip to chat
      </a>

      {drawerOpen && (
        <div className="fixed inset-0 z-30 bg-black/40 backdrop-blur-[1px] md:hidden" aria-hidden="true" onClick={() => setDrawerOpen(false)} />
      )}

      <aside
        id="sidebar"
        aria-label="Chat history"
        className={`fixed inset-y-0 left-0 z-40 w-[272px] shrink-0 border-r border-neutral-200 bg-neutral-50 transition-transform duration-200 ease-out md:static md:z-auto md:translate-x-0 dark:border-neutral-800 dark:bg-neutral-950 ${
          drawerOpen ? 'translate-x-0 shadow-xl' : '-translate-x-full max-md:invisible'
        } ${collapsed ? 'md:hidden' : ''}`}
      >
        <SessionList activeId={activeId} onClose={() => setDrawerOpen(false)} onCollapse={() => setCollapsed(true)} />
      </aside>

      <div className="flex min-w-0 flex-1 flex-col">
        <header className="flex h-14 shrink-0 items-center gap-1 border-b border-neutral-200/70 px-2 sm:px-3 dark:border-neutral-800/70">
          <button
            type="button"
            onClick={() => setDrawerOpen(true)}
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
                onClick={() => setCollapsed(false)}
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
          <p className="min-w-0 flex-1 truncate px-2 text-[15px] font-medium text-neutral-800 dark:text-neutral-200" title={title}>
            {title}
          </p>
          <Link
            href="/"
            aria-label="New chat"
            className="inline-flex size-9 items-center justify-center rounded-lg text-neutral-600 hover:bg-neutral-100 hover:text-neutral-900 md:hidden dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
          >
            <NewChatIcon className="size-[18px]" />
          </Link>
          <ThemeToggle />
        </header>
        <main id="main" tabIndex={-1} className="flex min-h-0 flex-1 flex-col outline-none">
          {children}
        </main>
      </div>
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
