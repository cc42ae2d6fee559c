'use client'
/**
 * A shared chat, read only: the owner's conversation, live (an answer streams here as it is
 * written, and is cut where its reader stopped it). Nothing here writes: no composer, no edit,
 * no regenerate, and the shared routes have no push. A revoked link says so.
 */
import Link from 'next/link'
import { useParams } from 'next/navigation'
import { useCallback, useEffect, useMemo, useState } from 'react'
import { useSession } from '@/lib/a2/react'
import { httpErrorOf } from '@/lib/a2/react'
import type { A2Event } from '@/lib/a2'
import type { ChatEvent } from '@/lib/chat/contract'
import { reduceChat, type ChatState } from '@/lib/chat/fold/reducer'
import { visibleTurns, type Selection } from '@/lib/chat/fold/versions'
import { joinWindow, type TurnsWindow } from '@/lib/chat/fold/first-screen'
import { Messages } from '@/components/chat/messages'
import { FileLinksProvider } from '@/components/chat/attachments'
import { useDocumentTitle } from '@/components/document-title'

/** The shared chat's first screen (lib/chat/fold/first-screen.ts): older turns come a page at a time. */
interface Shared extends Pick<TurnsWindow, 'older' | 'continues'> {
  session: { id: string; title: string }
  state: ChatState
  lastSeenIndex: number
}

const reducer = (state: ChatState, event: A2Event) => reduceChat(state, event as ChatEvent)
const noop = () => {}
const NONE: ReadonlySet<string> = new Set()

async function loadShared<T = Shared>(token: string, query = ''): Promise<T> {
  const response = await fetch(`/api/shared/${encodeURIComponent(token)}/snapshot${query}`)
  const body = (await response.json()) as T & { error?: { code: string; message: string } }
  if (!response.ok) throw httpErrorOf(response, body, 'could not load the shared chat')
  return body
}

export default function SharedChatPage() {
  const { token } = useParams<{ token: string }>()
  const [shared, setShared] = useState<Shared>()
  const [gone, setGone] = useState(false)
  useEffect(() => {
    loadShared(token).then(setShared, () => setGone(true))
  }, [token])
  // Once the link is revoked the chat's title is its owner's no longer to show: the header and the tab drop it at once.
  const title = gone ? undefined : shared?.session.title
  useDocumentTitle(shared && !gone ? `${title || 'Shared chat'} · a2 chat` : 'a2 chat')

  return (
    <main id="main" className="mx-auto flex h-dvh w-full max-w-3xl flex-col px-4">
      <header className="flex shrink-0 items-center gap-3 py-3">
        <Link href="/" className="text-sm font-semibold">
          a2 chat
        </Link>
        <p className="min-w-0 flex-1 truncate text-sm text-neutral-600 dark:text-neutral-400" data-testid="shared-title">
          {title}
        </p>
        <span className="rounded-full bg-neutral-100 px-2 py-0.5 text-xs text-neutral-600 dark:bg-neutral-800 dark:text-neutral-400">Read only</span>
      </header>
      {gone ? (
        <p role="status" data-testid="shared-gone" className="py-8 text-center">
          This chat is not shared, or its owner stopped sharing it.
        </p>
      ) : shared ? (
        <SharedLive key={shared.session.id} token={token} shared={shared} onGone={() => setGone(true)} />
      ) : (
        <p className="py-8 text-center text-sm text-neutral-500">Loading…</p>
      )}
    </main>
  )
}

function SharedLive({ token, shared, onGone }: { token: string; shared: Shared; onGone: () => void }) {
  const session = useSession<ChatState>(shared.session.id, {
    reducer,
    initial: shared.state,
    after: shared.lastSeenIndex,
    base: `/api/shared/${encodeURIComponent(token)}`,
    storage: null, // a viewer keeps no outbox: it has nothing to send
  })
  // The tail ends when the link is revoked: asked again, the link says whether it still holds.
  useEffect(() => {
    if (session.connection !== 'reconnecting') return
    let current = true
    loadShared(token).catch(() => current && onGone())
    return () => {
      current = false
    }
  }, [session.connection, token, onGone])
  // Versions stay browsable here too: the choice is this viewer's, as it is each tab's.
  const [selection, setSelection] = useState<Selection>({})
  const onSelectVersion = useCallback((slot: string, id: string, of: number) => setSelection((s) => ({ ...s, [slot]: { id, of } })), [])
  const turns = useMemo(() => visibleTurns(session.state, selection), [session.state, selection])
  // Older turns, and the turns under an older version chosen here, a page at a time (as the owner's chat does).
  const [history, setHistory] = useState({ older: shared.older, continues: new Set(shared.continues) })
  const { store } = session
  const loadPage = useCallback(
    async (where: 'above' | 'below', id: string) => {
      const page = await loadShared<TurnsWindow>(token, `?${where}=${encodeURIComponent(id)}`)
      store.amend((state) => joinWindow(state, page, where))
      setHistory((h) => ({
        older: where === 'above' && h.older === id ? page.older : h.older,
        continues: new Set([...h.continues, ...page.continues].filter((c) => !(where === 'below' && c === id))),
      }))
    },
    [token, store],
  )
  const onLoadOlder = useCallback(() => (history.older === null ? Promise.resolve() : loadPage('above', history.older)), [history.older, loadPage])
  const fileLink = useCallback((id: string) => `/api/shared/${encodeURIComponent(token)}/files/${id}`, [token])
  const end = turns.at(-1)?.turn.id
  useEffect(() => {
    if (end !== undefined && history.continues.has(end)) void loadPage('below', end).catch(() => {})
  }, [end, history.continues, loadPage])
  return (
    <div className="flex min-h-0 flex-1 flex-col" data-testid="shared-chat" data-connection={session.connection}>
      {/* The link's own file route: the viewer has no identity, and a revoked link reads no file. */}
      <FileLinksProvider value={fileLink}>
        <Messages
          turns={turns}
          busy={false}
          stopsUndelivered={NONE}
          followKey={0}
          onRegenerate={noop}
          onEdit={noop}
          onSelectVersion={onSelectVersion}
          hasOlder={history.older !== null}
          onLoadOlder={onLoadOlder}
          readOnly
        />
      </FileLinksProvider>
    </div>
  )
}
