/**
 * The a2 tables as drizzle sees them, for queries. The tables themselves are made by a2's
 * own migrations (./sql, applied by `migrate`); schema.test.ts checks that both agree. An
 * app reads them through `schema` from @/lib/a2/server and never generates DDL for them.
 *
 * Terminology: a *session* owns an append-only log of *events* (index 0,1,2… gapless);
 * a *job* is one (event, consumer) pair; each claim of a job is an *attempt* (the
 * fencing token); an *effect* is a side effect outside the log, recorded by stable key.
 */
import { sql } from 'drizzle-orm'
import { bigint, bigserial, boolean, foreignKey, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'

export const sessions = pgTable(
  'a2_sessions',
  {
    id: text('id').primaryKey(),
    owner: text('owner').notNull(),
    title: text('title').notNull().default(''),
    /** Number of events in the log; the next append gets this index. Updating it takes the per-session row lock. */
    head: integer('head').notNull().default(0),
    /** Bytes of payload pushed by browsers (not the server's chunks): what a per-session byte cap counts. */
    pushedBytes: bigint('pushed_bytes', { mode: 'number' }).notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('a2_sessions_owner_updated').on(t.owner, t.updatedAt)],
)
export type SessionRow = typeof sessions.$inferSelect

export const events = pgTable(
  'a2_events',
  {
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    index: integer('index').notNull(),
    id: text('id').notNull(),
    type: text('type').notNull(),
    payload: jsonb('payload').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.sessionId, t.index] }),
    // Event ids are unique per session, not globally: a client-chosen id can never
    // collide with (or probe for) an event in someone else's session.
    uniqueIndex('a2_events_session_id').on(t.sessionId, t.id),
  ],
)
export type EventRow = typeof events.$inferSelect

export const jobs = pgTable(
  'a2_jobs',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    eventIndex: integer('event_index').notNull(),
    eventId: text('event_id').notNull(),
    consumer: text('consumer').notNull(),
    /** Lane key, or null for no lane. Jobs of one (session, consumer, lane) run one at a time in index order. */
    lane: text('lane'),
    /**
     * A laned job waiting behind an earlier open job of its lane: not claimable. Set on insert
     * and cleared when the lane's head closes, by triggers (lib/a2/sql/0004_lane_heads.ts),
     * in the transaction that changes the lane. Meaningful while the job is open.
     */
    laneBlocked: boolean('lane_blocked').notNull().default(false),
    /** Run status: ACTIVE, CANCELLING, CANCELLED, COMPLETED, FAILED, UNKNOWN. */
    status: text('status').notNull().default('ACTIVE'),
    cancelVersion: integer('cancel_version').notNull().default(0),
    /** The event that cancelled the run: { id, index, type }. */
    cancelledBy: jsonb('cancelled_by'),
    attempt: integer('attempt').notNull().default(0),
    maxAttempts: integer('max_attempts').notNull(),
    runAt: timestamp('run_at', { withTimezone: true }).notNull().defaultNow(),
    owner: text('owner'),
    /** The owner process's liveness key: its advisory lock, held on a connection of its own for as long as it lives. */
    ownerKey: integer('owner_key'),
    leaseUntil: timestamp('lease_until', { withTimezone: true }),
    /** When CANCELLING began: the forced-cancel grace period counts from here. */
    cancellingSince: timestamp('cancelling_since', { withTimezone: true }),
    lastError: jsonb('last_error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('a2_jobs_event_consumer').on(t.sessionId, t.eventIndex, t.consumer),
    // The claim's index (jobs.ts, CLAIMABLE): only lane heads, by when they are next free, so
    // neither a waiting job nor a running one's lease is walked by a claim.
    index('a2_jobs_claimable')
      .on(sql`greatest(${t.runAt}, coalesce(${t.leaseUntil}, '-infinity'::timestamptz))`, t.id)
      .where(sql`status = 'ACTIVE' and not lane_blocked`),
    // The drain's runs whose last attempt was claimed (drain.ts, takeExhausted): usually none.
    index('a2_jobs_exhausted')
      .on(t.id)
      .where(sql`status = 'ACTIVE' and attempt >= max_attempts`),
    // Every open run holds its lane, UNKNOWN ones included.
    index('a2_jobs_session_open')
      .on(t.sessionId, t.consumer)
      .where(sql`status in ('ACTIVE', 'CANCELLING', 'UNKNOWN')`),
    // The liveness sweep looks only at runs held under a lease.
    index('a2_jobs_owned')
      .on(t.ownerKey)
      .where(sql`owner_key is not null`),
    index('a2_jobs_cancelling')
      .on(t.cancellingSince)
      .where(sql`status = 'CANCELLING'`),
    index('a2_jobs_updated').on(t.updatedAt),
  ],
)
export type JobRow = typeof jobs.$inferSelect

/** Every status change of a job, with its reason: how an operator explains a run afterwards. */
export const jobTransitions = pgTable(
  'a2_job_transitions',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    jobId: integer('job_id').notNull(),
    attempt: integer('attempt').notNull(),
    fromStatus: text('from_status'),
    toStatus: text('to_status').notNull(),
    reason: text('reason').notNull(),
    detail: jsonb('detail'),
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('a2_job_transitions_job').on(t.jobId, t.id)],
)
export type JobTransitionRow = typeof jobTransitions.$inferSelect

/**
 * Effects: INTENT → DISPATCHED → DONE | FAILED, or CANCELLED_BEFORE_DISPATCH, or UNKNOWN
 * (dispatched by an attempt that died; reconciled later or by an operator).
 */
export const effects = pgTable(
  'a2_effects',
  {
    jobId: integer('job_id').notNull(),
    key: text('key').notNull(),
    status: text('status').notNull(),
    attempt: integer('attempt').notNull(),
    cancelVersion: integer('cancel_version').notNull(),
    result: jsonb('result'),
    error: jsonb('error'),
    /** Its call may run twice at once under its key with no harm (migration 0007). */
    overlapSafe: boolean('overlap_safe').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.key] })],
)
export type EffectRow = typeof effects.$inferSelect

/**
 * Checkpoints of a fold (an app's reducer) over a session's log: the state after folding
 * events 0..at_index, stored as JSON text (text, not jsonb: jsonb refuses the \u0000 a log's
 * text may hold). The log is append-only, so a checkpoint stays true forever; a fold that
 * changes its meaning changes its name. Opening a session or starting an answer folds only
 * the events after the newest one (a 110k-event session: from ~1 s of reading and folding to
 * a few ms).
 */
export const checkpoints = pgTable(
  'a2_checkpoints',
  {
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    fold: text('fold').notNull(),
    atIndex: integer('at_index').notNull(),
    state: text('state').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** null: the state is `state`, one JSON text; n: it is n rows of a2_checkpoint_pieces (a fold's codec) and `state` is ''. */
    pieces: integer('pieces'),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.fold, t.atIndex] })],
)

/**
 * A checkpoint's state in pieces, in order, as its fold's codec wrote them (a block of 256
 * turns for the chat): read and written with the event loop given back between pieces.
 * Deleted with its checkpoint.
 */
export const checkpointPieces = pgTable(
  'a2_checkpoint_pieces',
  {
    sessionId: text('session_id').notNull(),
    fold: text('fold').notNull(),
    atIndex: integer('at_index').notNull(),
    piece: integer('piece').notNull(),
    body: text('body').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.sessionId, t.fold, t.atIndex, t.piece] }),
    foreignKey({
      columns: [t.sessionId, t.fold, t.atIndex],
      foreignColumns: [checkpoints.sessionId, checkpoints.fold, checkpoints.atIndex],
    }).onDelete('cascade'),
  ],
)
