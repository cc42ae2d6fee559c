import type { Metadata } from 'next'
import { NotFoundView } from '@/components/not-found'

export const metadata: Metadata = { title: 'Chat not found · a2 chat' }

/** A chat id that cannot exist: the chat's not-found page, inside the app's frame. */
export default function ChatNotFound() {
  return <NotFoundView kind="chat" />
}
