import { outboxKeyOf } from '@/lib/a2'

/**
 * The chat comes in the page's HTML as the server's log has it. A browser holding an intent for
 * it the server has not acknowledged (a Stop in its outbox: pressed offline, or just before a
 * reload) must not paint that: its Stop cuts what the answer may show. This script runs as the
 * HTML is parsed, before the conversation's markup, and marks the page held (`data-held` on
 * <html>: globals.css keeps the conversation out of sight); the chat lets it show once hydrated
 * with the outbox applied (chat.tsx, useShowWhenHydrated).
 */
export function HoldIfPending({ sessionId, nonce }: { sessionId: string; nonce?: string }) {
  const key = JSON.stringify(outboxKeyOf(sessionId)).replaceAll('<', '\\u003c')
  const script = `try{if(localStorage.getItem(${key})!==null)document.documentElement.setAttribute('data-held','')}catch(e){}`
  return <script nonce={nonce} dangerouslySetInnerHTML={{ __html: script }} />
}
