/**
 * The app's own tables; drizzle-kit reads this file and writes db/migrations. a2's tables
 * are the library's (lib/a2/sql, applied by `migrate` from @/lib/a2/server): app code that
 * reads them uses `schema` from @/lib/a2/server.
 */
import { sql } from 'drizzle-orm'
import { bigint, bigserial, boolean, customType, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'

/** Raw bytes (drizzle has no bytea of its own): a Buffer from postgres.js, a Uint8Array from PGlite. */
const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({ dataType: () => 'bytea' })

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

// ─── Accounts (better-auth, lib/auth/accounts.ts) ──────────────────────────────
// better-auth's core tables, as its drizzle adapter reads them: the JS keys are its field
// names. A guest (the signed a2_uid cookie, lib/auth/guest.ts) has no row here: an account is
// made when they sign up, and their chats move to it (lib/auth/adopt-guest.ts).

export const authUser = pgTable('auth_user', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  email: text('email').notNull().unique(),
  emailVerified: boolean('email_verified').notNull().default(false),
  image: text('image'),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
})

export const authSession = pgTable(
  'auth_session',
  {
    id: text('id').primaryKey(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    token: text('token').notNull().unique(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    ipAddress: text('ip_address'),
    userAgent: text('user_agent'),
    userId: text('user_id')
      .notNull()
      .references(() => authUser.id, { onDelete: 'cascade' }),
  },
  (t) => [index('auth_session_user').on(t.userId)],
)

export const authAccount = pgTable(
  'auth_account',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    providerId: text('provider_id').notNull(),
    userId: text('user_id')
      .notNull()
      .references(() => authUser.id, { onDelete: 'cascade' }),
    accessToken: text('access_token'),
    refreshToken: text('refresh_token'),
    idToken: text('id_token'),
    accessTokenExpiresAt: timestamp('access_token_expires_at', { withTimezone: true }),
    refreshTokenExpiresAt: timestamp('refresh_token_expires_at', { withTimezone: true }),
    scope: text('scope'),
    /** better-auth's own hash (scrypt) of an email-and-password account's password. */
    password: text('password'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('auth_account_user').on(t.userId)],
)

/** Email verification and password-reset tokens. */
export const authVerification = pgTable(
  'auth_verification',
  {
    id: text('id').primaryKey(),
    identifier: text('identifier').notNull(),
    value: text('value').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('auth_verification_identifier').on(t.identifier)],
)

/** Passkeys (@better-auth/passkey): a WebAuthn credential's public key, per account. */
export const authPasskey = pgTable(
  'auth_passkey',
  {
    id: text('id').primaryKey(),
    name: text('name'),
    publicKey: text('public_key').notNull(),
    userId: text('user_id')
      .notNull()
      .references(() => authUser.id, { onDelete: 'cascade' }),
    credentialID: text('credential_id').notNull(),
    /** The authenticator's signature counter: a clone shows as a counter that went back. */
    counter: integer('counter').notNull(),
    deviceType: text('device_type').notNull(),
    backedUp: boolean('backed_up').notNull(),
    transports: text('transports'),
    createdAt: timestamp('created_at', { withTimezone: true }),
    aaguid: text('aaguid'),
  },
  (t) => [index('auth_passkey_user').on(t.userId), index('auth_passkey_credential').on(t.credentialID)],
)

/** better-auth's sign-in rate limits, in the database so every app instance shares them. */
export const authRateLimit = pgTable('auth_rate_limit', {
  id: text('id').primaryKey(),
  key: text('key').notNull().unique(),
  count: integer('count').notNull(),
  lastRequest: bigint('last_request', { mode: 'number' }).notNull(),
})

/**
 * Mail the app would send (verification, password reset), written here instead: this app
 * ships no mail server. A deployment delivers the rows (or replaces lib/auth/mail.ts); the
 * UI says a message was queued, never that it was sent. Tests read their links from here.
 */
export const mailOutbox = pgTable(
  'mail_outbox',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
    to: text('to').notNull(),
    subject: text('subject').notNull(),
    text: text('text').notNull(),
    /** The link the message carries (verify, reset), as its own column so nothing parses the text. */
    link: text('link').notNull(),
  },
  (t) => [index('mail_outbox_to').on(t.to, t.at)],
)

/**
 * Read-only links to a chat (lib/chat/server/share.ts). The link carries a random token; only its
 * SHA-256 is kept, so reading this table gives no one a working link. A chat has at most one
 * live link; revoking it ends every open viewer's tail within a second.
 */
export const shareLinks = pgTable(
  'share_links',
  {
    tokenHash: text('token_hash').primaryKey(),
    sessionId: text('session_id').notNull(),
    owner: text('owner').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [
    uniqueIndex('share_links_live')
      .on(t.sessionId)
      .where(sql`revoked_at is null`),
  ],
)

/**
 * Files attached to messages (lib/files). The log's `message` event names a file (id, name,
 * media type, size, sha256); the bytes live in `file_bytes` (the default back end) or in an
 * S3-compatible bucket (`storage = 's3'`, keyed by id). `owner` is the account or guest that
 * uploaded it; `session_id` is the chat whose message first named it (null until then: such an
 * upload is swept after A2_UNREFERENCED_FILE_TTL_MS). Only the owner, or a live share link of
 * that chat, is ever served it.
 */
export const files = pgTable(
  'files',
  {
    id: text('id').primaryKey(),
    owner: text('owner').notNull(),
    sessionId: text('session_id'),
    name: text('name').notNull(),
    mediaType: text('media_type').notNull(),
    size: integer('size').notNull(),
    sha256: text('sha256').notNull(),
    storage: text('storage').notNull(),
    /** An image's thumbnail (WebP, lib/files/thumbnail.ts), a few KB: what a chat shows, so opening one sends no originals. */
    thumb: bytea('thumb'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('files_owner').on(t.owner),
    index('files_session').on(t.sessionId),
    index('files_unreferenced')
      .on(t.createdAt)
      .where(sql`session_id is null`),
  ],
)
export type FileRow = typeof files.$inferSelect

/**
 * Bytes of the files kept in the database (the default back end), in parts of at most 1 MiB in
 * `seq` order (lib/files/blob-store.ts says why): deleted with their row.
 */
export const fileBytes = pgTable(
  'file_bytes',
  {
    fileId: text('file_id')
      .notNull()
      .references(() => files.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull().default(0),
    bytes: bytea('bytes').notNull(),
  },
  (t) => [primaryKey({ columns: [t.fileId, t.seq] })],
)
