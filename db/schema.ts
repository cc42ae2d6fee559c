/**
 * The app's own tables; drizzle-kit reads this file and writes db/migrations. a2's tables
 * are the library's (lib/a2/sql, applied by `migrate` from @/lib/a2/server): app code that
 * reads them uses `schema` from @/lib/a2/server.
 */
import { bigserial, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

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

/**
 * Rate counters (lib/http/limits.ts; the shape rate-limiter-flexible's RateLimiterDrizzle
 * used before, so its rows carry on): one row per limited key, its points and the end of its
 * window, upserted atomically, so every app instance on this database shares each limit.
 */
export const rateLimits = pgTable('rate_limits', {
  key: text('key').primaryKey(),
  points: integer('points').notNull().default(0),
  expire: timestamp('expire', { withTimezone: true }),
})

/** Every operator action on a run (settling an UNKNOWN effect): who, when, what they decided, and how it ended. */
export const operatorAudit = pgTable(
  'operator_audit',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
    /** `user:<id>` (an allow-listed user) or `token:<first 8 hex of its SHA-256>`. */
    operator: text('operator').notNull(),
    action: text('action').notNull(),
    jobId: integer('job_id').notNull(),
    effectKey: text('effect_key').notNull(),
    verdict: jsonb('verdict').notNull(),
    /** The run's status after the resolution, or the error code when it was refused. */
    outcome: text('outcome').notNull(),
  },
  (t) => [index('operator_audit_job').on(t.jobId, t.at)],
)
export type OperatorAuditRow = typeof operatorAudit.$inferSelect

/**
 * Model tokens a user spent in chats they have since deleted, for the day's budget: the
 * budget counts the usage on `finished` events, and deleting a chat must not give it back.
 * Written in the delete's own transaction.
 */
export const spentTokens = pgTable(
  'spent_tokens',
  {
    owner: text('owner').notNull(),
    at: timestamp('at', { withTimezone: true }).notNull(),
    tokens: integer('tokens').notNull(),
  },
  (t) => [index('spent_tokens_owner_at').on(t.owner, t.at)],
)
