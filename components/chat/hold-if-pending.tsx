import { heldByOutbox, outboxKeyOf } from '@/lib/a2'

/**
 * The chat comes in the page's HTML as the server's log had it, up to `lastSeenIndex`. A
 * browser holding an intent for it that fold lacks (a Stop in its outbox: pressed offline, or
 * acknowledged just before a reload whose HTML was read from the log before the Stop landed)
 * must not paint that: its Stop cuts what the answer may show. This script runs as the HTML is
 * parsed, before the conversation's markup, and marks the page held (`data-held` on <html>:
 * globals.css keeps the conversation out of sight); the chat lets it show once hydrated with
 * the outbox applied (chat.tsx, useShowWhenHydrated).
 */
export function HoldIfPending({ sessionId, lastSeenIndex, nonce }: { sessionId: string; lastSeenIndex: number; nonce?: string }) {
  const key = JSON.stringify(outboxKeyOf(sessionId)).replaceAll('<', '\\u003c')
  // heldByOutbox is self-contained (outbox.ts): its source runs as it is in the page.
  const script = `try{if((${heldByOutbox.toString()})(localStorage.getItem(${key}),${Math.trunc(lastSeenIndex)}))document.documentElement.setAttribute('data-held','')}catch(e){}`
  return <script nonce={nonce} dangerouslySetInnerHTML={{ __html: script }} />
}
