import { notFound } from 'next/navigation'
import { Chat } from '@/components/chat/chat'
import { isSessionId } from '@/components/session-id'

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
  // A new store per session: switching chats remounts the chat.
  return <Chat key={id} sessionId={id} revealTurn={typeof turn === 'string' ? turn : undefined} />
}
