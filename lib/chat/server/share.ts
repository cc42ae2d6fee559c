/**
 * Read-only links to a chat. A link is `/s/<token>`: 32 random bytes, of which only the
 * SHA-256 is stored (share_links), so the table gives no one a working link. Whoever holds
 * the link reads the chat live (its fold and its tail) and can write nothing: the shared
 * routes have no push. The owner revokes it; a viewer's open tail checks every
 * REVOKE_CHECK_MS and closes, so a revoked link stops showing anything within a second.
 */
import { createHash, randomBytes } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { Executor } from '@/lib/a2/server'
import { getStore } from '@/lib/store'
import { rowsOf } from '@/lib/store/rows'

/** How often an open shared tail asks whether its link still holds: a revoke closes it within this. */
export const REVOKE_CHECK_MS = 500
/** A token as the link carries it: 43 base64url characters. Anything else is no link. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/

const hash = (token: string) => createHash('sha256').update(token).digest('base64url')

export interface SharedChat {
  sessionId: string
  owner: string
}

/** A new live link for the owner's chat (the owner was checked by the caller); an older live one is revoked. */
export async function createShareLink(sessionId: string, owner: string): Promise<string> {
  const token = randomBytes(32).toString('base64url')
  const { db } = await getStore()
  await db.transaction(async (tx) => {
    await tx.execute(sql`update share_links set revoked_at = now() where session_id = ${sessionId} and revoked_at is null`)
    await tx.execute(sql`insert into share_links (token_hash, session_id, owner) values (${hash(token)}, ${sessionId}, ${owner})`)
  })
  return token
}

/** Ends the chat's live link, if it has one; returns whether one was live. */
export async function revokeShareLink(sessionId: string, owner: string): Promise<boolean> {
  const { db } = await getStore()
  const revoked = rowsOf(
    await db.execute(
      sql`update share_links set revoked_at = now() where session_id = ${sessionId} and owner = ${owner} and revoked_at is null returning 1`,
    ),
  )
  return revoked.length > 0
}

/** Whether the owner's chat has a live link (its token is not kept: the owner makes a new one to see it again). */
export async function hasShareLink(sessionId: string, owner: string): Promise<boolean> {
  const { db } = await getStore()
  return (
    rowsOf(await db.execute(sql`select 1 from share_links where session_id = ${sessionId} and owner = ${owner} and revoked_at is null`)).length > 0
  )
}

/** The chat a live link names, or undefined (unknown, malformed or revoked: the caller answers 404 for all three). */
export async function resolveShareLink(token: string): Promise<SharedChat | undefined> {
  if (!TOKEN.test(token)) return undefined
  const { db } = await getStore()
  const [row] = rowsOf<{ session_id: string; owner: string }>(
    await db.execute(sql`select session_id, owner from share_links where token_hash = ${hash(token)} and revoked_at is null`),
  )
  return row ? { sessionId: row.session_id, owner: row.owner } : undefined
}

/** In a chat's delete: its links go with it. */
export async function deleteShareLinks(tx: Executor, sessionId: string): Promise<void> {
  await tx.execute(sql`delete from share_links where session_id = ${sessionId}`)
}
