/** saveNote: writes a note to the user's outbox, a side effect asked by key (notes.find) when a Stop or a crash cuts it off. */
import { z } from 'zod'
import type { NoteRow } from '@/db/schema'
import type { NoteOutbox } from '../notes'
import type { ToolKind } from '../tool-kind'

export function saveNote(notes: NoteOutbox): ToolKind<{ note: string }, NoteRow> {
  return {
    name: 'saveNote',
    description: 'Save a short note for the user to find later on their notes page.',
    inputSchema: z.object({ note: z.string().min(1).max(2000) }),
    dispatch: (input, { idempotencyKey, sessionId }) => notes.save({ idempotencyKey, sessionId, body: input.note }),
    lookup: async (idempotencyKey) => {
      const saved = await notes.find(idempotencyKey)
      return saved ? { done: true, result: saved } : { done: false }
    },
    toModel: async (saved, input, ctx) => {
      await ctx.append({ type: 'note.saved', payload: { of: ctx.event.id, note: input.note, key: saved.idempotencyKey } })
      return { saved: true }
    },
  }
}
