/** The app's database schema: the a2 tables plus the app's own. drizzle-kit reads this file. */
import { index, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

export { sessions, events, jobs, jobTransitions, effects } from '../lib/a2/schema'

/** The assistant's "save a note" tool writes here, through ctx.effect, keyed by its idempotency key. */
export const notes = pgTable(
  'notes',
  {
    idempotencyKey: text('idempotency_key').primaryKey(),
    owner: text('owner').notNull(),
    sessionId: text('session_id').notNull(),
    body: text('body').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('notes_owner').on(t.owner, t.createdAt)],
)
export type NoteRow = typeof notes.$inferSelect
