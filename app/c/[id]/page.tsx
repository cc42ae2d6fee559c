import { Chat } from '@/components/chat/chat'

export default async function ChatPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params
  // A new store per session: switching chats remounts the chat.
  return <Chat key={id} sessionId={id} />
}
