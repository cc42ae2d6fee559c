import { headers } from 'next/headers'
import { notFound } from 'next/navigation'
import { Chat } from '@/components/chat/chat'
import { HoldIfPending } from '@/components/chat/hold-if-pending'
import { ScrollToLatest } from '@/components/chat/scroll-to-latest'
import { isSessionId } from '@/components/session-id'
import { pageFirstScreen } from '@/lib/chat/server/page-first-screen'
import { finishedAnswers } from './finished-answers'

export default async function ChatPage({
  params,
  searchParams,
}: {
  params: Promise<{ id: string }>
  /** `turn`: a turn to open the chat scrolled to (a search result's message). */
  searchParams: Promise<{ turn?: string | string[] }>
}) {
  const { id } = await params
  const { turn } = await searchParams
  // A malformed id cannot be a chat: a 404 now, not a skeleton and an error that cannot clear.
  if (!isSessionId(id)) notFound()
  // The owner's chat comes in the HTML; anyone else's page asks the snapshot route and says what it answers.
  const firstScreen = await pageFirstScreen(id)
  // The CSP's nonce for this response (proxy.ts): the inline script must carry it.
  const nonce = (await headers()).get('x-nonce') ?? undefined
  return (
    <>
      {firstScreen && <HoldIfPending sessionId={id} lastSeenIndex={firstScreen.lastSeenIndex} nonce={nonce} />}
      {/* A new store per session: switching chats remounts the chat. */}
      <Chat
        key={id}
        sessionId={id}
        revealTurn={typeof turn === 'string' ? turn : undefined}
        firstScreen={firstScreen}
        renderedAnswers={firstScreen && finishedAnswers(firstScreen)}
      />
      {/* After the chat's markup, composer included: the scroller has its final height when it runs. */}
      {firstScreen && typeof turn !== 'string' && <ScrollToLatest nonce={nonce} />}
    </>
  )
}
