import { notFound } from 'next/navigation'
import { Chat } from '@/components/chat/chat'
import { isSessionId } from '@/components/session-id'

export default async function ChatPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params
  // A malformed id cannot be a chat: a 404 now, not a skeleton and an error that cannot clear.
  if (!isSessionId(id)) notFound()
  // A new store per session: switching chats remounts the chat.
  return <Chat key={id} sessionId={id} />
}
