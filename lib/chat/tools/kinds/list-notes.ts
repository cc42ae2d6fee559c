/** listNotes: reads the user's saved notes, newest first (read-only: nothing outside changes). */
import { z } from 'zod'
import type { NoteOutbox } from '../notes'
import type { ToolKind } from '../tool-kind'

export function listNotes(notes: NoteOutbox): ToolKind<{ limit?: number }, string[]> {
  return {
    name: 'listNotes',
    description: "Read the user's saved notes, newest first.",
    inputSchema: z.object({ limit: z.number().int().min(1).max(20).optional() }),
    readOnly: true,
    dispatch: async (input, { sessionId }) => (await notes.listOf(sessionId, input.limit ?? 10)).map((note) => note.body),
  }
}
