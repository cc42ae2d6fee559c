/**
 * How one tab tells the browser's other tabs (same origin, so the same identity cookie and the
 * same chats) that it changed the chat list, so a sidebar side by side with it follows at once
 * instead of when it is next brought to the front. A BroadcastChannel: same browser only; the
 * server has no feed of the list, so another browser or device still sees a change on its
 * next read (becoming visible, or its own next change).
 */

/** A change one tab made, as the others apply it. */
export type ListChange =
  /** A delete's undo window opened: hide the chat, it may come back. */
  | { type: 'hidden'; id: string }
  /** Undone, or the delete failed: the chat is back. */
  | { type: 'restored'; id: string }
  /** The server deleted it (the window ended): gone for good. */
  | { type: 'deleted'; id: string }
  | { type: 'renamed'; id: string; title: string }
  /** Created, titled from its first message, answering: re-read the list. */
  | { type: 'changed' }

const CHANNEL_NAME = 'a2-sessions'

let channel: BroadcastChannel | null | undefined

function openChannel(): BroadcastChannel | null {
  if (channel !== undefined) return channel
  channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel(CHANNEL_NAME) : null
  // Node's (the store's unit tests) would otherwise keep the process alive.
  ;(channel as { unref?: () => void } | null)?.unref?.()
  return channel
}

export function tellOtherTabs(change: ListChange): void {
  try {
    openChannel()?.postMessage(change)
  } catch {
    // A closed or unavailable channel: the other tabs catch up on their next read.
  }
}

/** Calls `apply` with each change another tab makes (a tab never hears its own). */
export function listenToOtherTabs(apply: (change: ListChange) => void): () => void {
  const open = openChannel()
  if (!open) return () => {}
  const onMessage = (event: MessageEvent) => {
    if (isListChange(event.data)) apply(event.data)
  }
  open.addEventListener('message', onMessage)
  return () => open.removeEventListener('message', onMessage)
}

function isListChange(data: unknown): data is ListChange {
  if (typeof data !== 'object' || data === null) return false
  const { type, id, title } = data as Record<string, unknown>
  if (type === 'changed') return true
  if (typeof id !== 'string') return false
  if (type === 'renamed') return typeof title === 'string'
  return type === 'hidden' || type === 'restored' || type === 'deleted'
}
