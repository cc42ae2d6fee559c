/**
 * A guest who signs up or signs in keeps what they made: their chats move to the account
 * (lib/a2's sessions.transfer), and the app's rows that name them move in the same
 * transaction — their notes, their chats' share links, their files, and the tokens they spent in chats they deleted, so the daily
 * budget counts the guest's spending against the account. Running again moves nothing
 * more: no duplicate, no orphan.
 */
import { sql } from 'drizzle-orm'
import { getChatServer } from '@/lib/chat/server/chat-server'

export async function adoptGuest(guestId: string, accountId: string): Promise<number> {
  const { server } = await getChatServer()
  return server.sessions.transfer(guestId, accountId, {
    within: async (tx) => {
      await tx.execute(sql`update notes set owner = ${accountId} where owner = ${guestId}`)
      await tx.execute(sql`update spent_tokens set owner = ${accountId} where owner = ${guestId}`)
      await tx.execute(sql`update share_links set owner = ${accountId} where owner = ${guestId}`)
      await tx.execute(sql`update files set owner = ${accountId} where owner = ${guestId}`)
    },
  })
}
