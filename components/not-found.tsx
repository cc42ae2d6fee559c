'use client'
import Link from 'next/link'
import { useEffect, useRef } from 'react'
import { Logo } from './session-list'
import { chatListStore } from './chat-list-store'

/**
 * "Nothing here", with a way home: an unknown route (`page`), or a chat that does not exist,
 * is malformed, or belongs to someone else (`chat` — the server does not say which).
 */
export function NotFoundView({
  kind,
  sessionId,
  replacesChat = false,
}: {
  kind: 'page' | 'chat'
  sessionId?: string
  /** It takes the place of a chat that was on screen (deleted meanwhile, from another tab). */
  replacesChat?: boolean
}) {
  const headingRef = useRef<HTMLHeadingElement>(null)
  // The header stops calling this chat "New chat".
  useEffect(() => {
    if (sessionId) chatListStore.markMissing(sessionId)
  }, [sessionId])
  // The chat's composer or buttons went with it: focus that was there fell to <body>. It goes
  // to the heading, which a screen reader then reads. Focus elsewhere (the sidebar) stays.
  useEffect(() => {
    if (replacesChat && (document.activeElement === null || document.activeElement === document.body)) {
      headingRef.current?.focus({ preventScroll: true })
    }
  }, [replacesChat])

  const chat = kind === 'chat'
  return (
    <div
      data-testid={chat ? 'chat-not-found' : 'not-found'}
      className={`flex flex-1 flex-col items-center justify-center gap-3 p-8 text-center ${chat ? '' : 'min-h-dvh'}`}
    >
      {!chat && (
        <Link href="/" className="mb-4 flex items-center gap-2 text-[15px] font-semibold tracking-tight">
          <Logo />
          a2 chat
        </Link>
      )}
      {!chat && <p className="text-sm font-medium text-neutral-500 tabular-nums dark:text-neutral-400">404</p>}
      <h1 ref={headingRef} tabIndex={-1} className="text-lg font-semibold text-neutral-900 outline-none dark:text-neutral-50">
        {chat ? 'This chat isn’t available' : 'Page not found'}
      </h1>
      <p className="max-w-sm text-sm text-neutral-600 dark:text-neutral-400">
        {chat
          ? 'The link may be wrong, the chat may have been deleted, or it was started in another browser — chats belong to the browser that started them.'
          : 'There is nothing at this address. Check the link, or start a new chat.'}
      </p>
      <Link
        href="/"
        className="mt-1 rounded-lg bg-neutral-900 px-4 py-2 text-sm font-medium text-white hover:bg-neutral-700 focus-visible:outline-2 focus-visible:outline-offset-2 dark:bg-white dark:text-neutral-900 dark:hover:bg-neutral-200"
      >
        Start a new chat
      </Link>
    </div>
  )
}
