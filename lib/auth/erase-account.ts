/**
 * Deleting an account leaves no row of it: every chat (as a chat's own delete does, so a
 * chat with an UNKNOWN call refuses the whole deletion first, with nothing erased), its
 * files (rows and bytes, in either back end), its notes, the tokens it spent, its share links, its mail, its rate-limit rows, and its name
 * in the operator audit. better-auth then deletes the user and, by cascade, its sessions,
 * sign-in methods and passkeys.
 */
import { APIError } from 'better-auth/api'
import { sql } from 'drizzle-orm'
import { deleteChat } from '@/lib/chat/server/delete-chat'
import { getChatServer } from '@/lib/chat/server/chat-server'
import { getFiles } from '@/lib/files'
import { getStore } from '@/lib/store'

export async function eraseAccountData(user: { id: string; email: string }): Promise<void> {
  const { server } = await getChatServer()
  const ids: string[] = []
  for (let before: string | undefined; ;) {
    const page = await server.sessions.list(user.id, { limit: 100, before })
    ids.push(...page.sessions.map((s) => s.id))
    if (!page.nextBefore) break
    before = page.nextBefore
  }
  if ((await server.sessions.unresolved(ids)).length > 0) {
    throw new APIError('CONFLICT', { message: 'A chat has a call that may or may not have happened: the account can be deleted once it is settled.' })
  }
  for (const id of ids) await deleteChat(server, id, user.id, { keepSpent: false })
  await (await getFiles()).deleteForOwner(user.id) // and the uploads no chat named
  const { db } = await getStore()
  const email = user.email.toLowerCase()
  await db.transaction(async (tx) => {
    await tx.execute(sql`delete from notes where owner = ${user.id}`)
    await tx.execute(sql`delete from spent_tokens where owner = ${user.id}`)
    await tx.execute(sql`delete from share_links where owner = ${user.id}`)
    await tx.execute(sql`delete from mail_outbox where lower("to") = ${email}`)
    await tx.execute(sql`delete from rate_limits where key like ${`%:${user.id}`} or key = ${`sign-ins:account:${email}`}`)
    await tx.execute(sql`delete from auth_verification where value like ${`%${user.id}%`} or identifier like ${`%${email}%`}`)
    await tx.execute(sql`update operator_audit set operator = 'user:deleted' where operator = ${`user:${user.id}`}`)
  })
}
