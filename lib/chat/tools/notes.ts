/**
 * The note outbox: where the assistant's saveNote tool delivers. Keyed by the effect's
 * idempotency key, so a replayed dispatch can never save a note twice, and a crashed
 * attempt can be reconciled by looking the key up.
 */
import { and, desc, eq } from 'drizzle-orm'
import { schema, type Store } from '@/lib/a2/server'
import { notes, type NoteRow } from '@/db/schema'
import { A2Error } from '@/lib/a2'

export interface NoteOutbox {
  save(note: { idempotencyKey: string; sessionId: string; body: string }): Promise<NoteRow>
  find(idempotencyKey: string): Promise<NoteRow | undefined>
  list(owner: string, limit?: number): Promise<NoteRow[]>
  /** The notes of the user who owns this session (what the listNotes tool reads). */
  listOf(sessionId: string, limit?: number): Promise<NoteRow[]>
}

export function noteOutbox(store: Store): NoteOutbox {
  const db = store.db
  const ownerOf = async (sessionId: string) => {
    const { sessions } = schema
    const [row] = await db.select({ owner: sessions.owner }).from(sessions).where(eq(sessions.id, sessionId))
    if (!row) throw new A2Error('not_found', 'no such session')
    return row.owner
  }
  return {
    async save({ idempotencyKey, sessionId, body }) {
      const owner = await ownerOf(sessionId)
      await db.insert(notes).values({ idempotencyKey, owner, sessionId, body }).onConflictDoNothing()
      const [row] = await db.select().from(notes).where(eq(notes.idempotencyKey, idempotencyKey))
      if (!row) throw new Error(`note ${idempotencyKey} vanished after its insert`)
      return row
    },
    async find(idempotencyKey) {
      const [row] = await db.select().from(notes).where(eq(notes.idempotencyKey, idempotencyKey))
      return row
    },
    async listOf(sessionId, limit = 100) {
      return this.list(await ownerOf(sessionId), limit)
    },
    list(owner, limit = 100) {
      return db
        .select()
        .from(notes)
        .where(and(eq(notes.owner, owner)))
        .orderBy(desc(notes.createdAt))
        .limit(limit)
    },
  }
}
