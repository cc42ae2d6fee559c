'use client'
import { useRouter } from 'next/navigation'
import { useCallback, useEffect, useRef, useState } from 'react'
import { ErrorAlert } from './chat/error-alert'
import { handOffFirstFiles } from './chat/attachments'
import type { FileRef } from '@/lib/chat/contract'
import { Composer, type ComposerHandle } from './chat/composer'
import { clearDraftIf } from './chat/drafts'
import { OfflineNotice } from './chat/offline-notice'
import { FOCUS_COMPOSER_EVENT, Logo } from './session-list'
import { A2HttpError } from '@/lib/a2/react'
import { handOffFirstMessage, chatListStore } from './chat-list-store'
import { STARTERS } from '@/lib/ai/starters'

/**
 * "/": no session yet. The first message creates one, is handed to the chat page, and is
 * sent there (so the chat page's store owns it, with its optimistic view and Retry).
 */
/** The new-chat page's draft key (chats use their ids). */
const NEW_CHAT_DRAFT = 'new'

export function NewChat() {
  const router = useRouter()
  const [sending, setSending] = useState(false)
  const [error, setError] = useState<A2HttpError | undefined>()
  const lastText = useRef('')
  const composerRef = useRef<ComposerHandle>(null)

  useEffect(() => {
    const focus = () => composerRef.current?.focus()
    window.addEventListener(FOCUS_COMPOSER_EVENT, focus)
    return () => window.removeEventListener(FOCUS_COMPOSER_EVENT, focus)
  }, [])

  const start = useCallback(
    async (text: string, files: FileRef[] = []) => {
      lastText.current = text
      setSending(true)
      setError(undefined)
      try {
        const session = await chatListStore.create()
        handOffFirstMessage(session.id, text)
        handOffFirstFiles(session.id, files)
        // Sent (from the box, Retry or a suggestion): not the next new chat's draft.
        clearDraftIf(NEW_CHAT_DRAFT, text)
        router.push(`/c/${encodeURIComponent(session.id)}`)
        // Stay "sending" until the chat page replaces this one.
      } catch (e) {
        setSending(false)
        setError(e instanceof A2HttpError ? e : new A2HttpError('error', e instanceof Error ? e.message : String(e), { cause: e }))
        throw e
      }
    },
    [router],
  )

  return (
    <div className="flex min-h-0 flex-1 flex-col overflow-y-auto [scrollbar-gutter:stable_both-edges]">
      <div className="mx-auto flex w-full max-w-3xl flex-1 flex-col justify-center px-4 py-10 sm:px-6">
        <div className="mb-8 flex flex-col items-center text-center">
          <Logo className="size-11 rounded-xl text-base" />
          <h1 className="mt-5 text-2xl font-semibold tracking-tight text-neutral-900 sm:text-3xl dark:text-neutral-50">What can I help with?</h1>
          <p className="mt-2 max-w-md text-sm text-neutral-500 dark:text-neutral-400">
            Answers stream as they’re written. Press Stop and the generation really stops — on the server too.
          </p>
        </div>

        <OfflineNotice />
        {error && (
          <ErrorAlert
            error={{ code: error.code, status: error.status, retryAfterS: error.retryAfterS, message: `Couldn’t start a new chat: ${error.message}` }}
            lost="message"
            onRetry={() => void start(lastText.current).catch(() => {})}
            onDismiss={() => setError(undefined)}
          />
        )}
        <Composer ref={composerRef} onSend={start} sending={sending} autoFocus placeholder="Ask anything" draftKey={NEW_CHAT_DRAFT} />

        <ul className="mt-4 grid gap-2 sm:grid-cols-2" aria-label="Suggestions">
          {STARTERS.map((s) => (
            <li key={s.title}>
              <button
                type="button"
                disabled={sending}
                onClick={() => void start(s.prompt).catch(() => {})}
                className="h-full w-full rounded-2xl border border-neutral-200 px-4 py-3 text-left transition hover:bg-neutral-50 disabled:opacity-50 dark:border-neutral-800 dark:hover:bg-neutral-800/60"
              >
                <span className="block text-sm font-medium text-neutral-800 dark:text-neutral-200">{s.title}</span>
                <span className="mt-0.5 line-clamp-2 block text-sm text-neutral-500 dark:text-neutral-400">{s.prompt}</span>
              </button>
            </li>
          ))}
        </ul>
      </div>
    </div>
  )
}
