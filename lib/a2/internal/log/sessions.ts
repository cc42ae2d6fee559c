/**
 * Sessions as rows: create, get, list, rename, search, delete and transfer, and which of them
 * hold runs still running or unresolved. Their events are the log's (append.ts).
 */
import { randomUUID } from 'node:crypto'
import { and, eq, sql } from 'drizzle-orm'
import { sessions } from '../../schema'
import { RENAMED_TYPE, type A2Event } from '../core/contract'
import { A2Error } from '../core/errors'
import { LEASED } from '../core/transitions'
import type { Routing } from '../core/types'
import { query, type Executor, type Store } from '../store/store'
import { append } from './append'

export interface SessionSummary {
  id: string
  title: string
  head: number
  createdAt: string
  updatedAt: string
}

export async function createSession(store: Store, owner: string, options: { id?: string; title?: string } = {}): Promise<SessionSummary> {
  const [row] = await store.db
    .insert(sessions)
    .values({ id: options.id ?? randomUUID(), owner, title: options.title ?? '' })
    .returning()
  return summarize(row)
}

/** A session's summary, or a typed error when it does not exist or belongs to someone else. */
export async function getOwnedSession(store: Store, sessionId: string, owner: string): Promise<SessionSummary> {
  const [row] = await store.db.select().from(sessions).where(eq(sessions.id, sessionId))
  // Someone else's session answers like a missing one: no existence oracle.
  if (!row || row.owner !== owner) throw new A2Error('not_found', 'no such session')
  return summarize(row)
}

/**
 * An owner's sessions, most recently active first, paged by an opaque keyset cursor
 * (`updated_at` to the microsecond, then id): sessions touched in the same millisecond
 * are neither skipped nor repeated across pages.
 */
export async function listSessions(
  store: Store,
  owner: string,
  options: { limit?: number; before?: string } = {},
): Promise<{ sessions: SessionSummary[]; nextBefore?: string }> {
  const limit = Math.min(options.limit ?? 50, 200)
  const cursor = options.before ? parseCursor(options.before) : undefined
  const rows = await query<{ id: string; title: string; head: number; created_at: Date | string; updated_at: Date | string; us: string }>(
    store.db,
    sql`select id, title, head, created_at, updated_at, (extract(epoch from updated_at) * 1000000)::bigint::text as us
        from a2_sessions
        where owner = ${owner}
          ${cursor ? sql`and (updated_at, id) < (timestamptz 'epoch' + ${cursor.us} * interval '1 microsecond', ${cursor.id})` : sql``}
        order by updated_at desc, id desc
        limit ${limit}`,
  )
  const sessions = rows.map((r) =>
    summarize({ id: r.id, title: r.title, head: r.head, createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at) }),
  )
  const last = rows[rows.length - 1]
  return rows.length === limit ? { sessions, nextBefore: `${last.us}.${last.id}` } : { sessions }
}

function parseCursor(cursor: string): { us: string; id: string } {
  // 16 digits: microseconds since 1970 stay under 10^16 until the year 2286, and a longer
  // number overflowed bigint in the query (a 500).
  const match = /^(\d{1,16})\.(.{1,100})$/.exec(cursor)
  if (!match) throw new A2Error('bad_request', 'invalid page cursor')
  return { us: match[1], id: match[2] }
}

/**
 * Sets the title and appends `a2.renamed { title }` in one transaction (the row and the event
 * commit together or not at all), so every tab's view and any consumer that `abortOn`s it learn
 * the rename from the log. A server append: it leaves the list's order (updated_at) alone.
 * `event: false` sets only the row, for a title derived from events already in the log (an app
 * titling a chat from its first message): the log holds it already, and a second event would
 * count against the session's event cap for something the user did not push.
 */
export async function renameSession(
  store: Store,
  routing: Routing,
  sessionId: string,
  owner: string,
  title: string,
  options: { event?: boolean } = {},
): Promise<A2Event | undefined> {
  if (options.event === false) {
    const updated = await store.db
      .update(sessions)
      .set({ title })
      .where(and(eq(sessions.id, sessionId), eq(sessions.owner, owner)))
      .returning({ id: sessions.id })
    if (updated.length !== 1) throw new A2Error('not_found', 'no such session')
    return undefined
  }
  const { events: appended } = await append(store, routing, sessionId, [{ type: RENAMED_TYPE, payload: { title } }], {
    within: async (tx) => {
      const updated = await query<{ id: string }>(
        tx,
        sql`update a2_sessions set title = ${title} where id = ${sessionId} and owner = ${owner} returning id`,
      )
      // Someone else's session answers like a missing one: no existence oracle.
      if (updated.length !== 1) throw new A2Error('not_found', 'no such session')
    },
  })
  return appended[0]
}

function summarize(row: Pick<typeof sessions.$inferSelect, 'id' | 'title' | 'head' | 'createdAt' | 'updatedAt'>): SessionSummary {
  return {
    id: row.id,
    title: row.title,
    head: row.head,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  }
}

/** A run not yet settled: its job, the event that started it (what a Stop names), and its status. */
export interface OpenRun {
  sessionId: string
  eventId: string
  consumer: string
  status: string
}

/**
 * The runs of these sessions still running (ACTIVE, or CANCELLING while they unwind): what a
 * delete stops first, and which chats a list marks as still generating. One query on the
 * partial index of open jobs (a2_jobs_session_open); callers pass only ids they own. An
 * UNKNOWN run waits for an operator and is not listed.
 */
export async function openRuns(store: Store, sessionIds: readonly string[]): Promise<OpenRun[]> {
  if (sessionIds.length === 0) return []
  const rows = await query<{ session_id: string; event_id: string; consumer: string; status: string }>(
    store.db,
    sql`select session_id, event_id, consumer, status from a2_jobs
        where session_id in ${sessionIds} and status in ${LEASED}
        order by session_id, event_index`,
  )
  return rows.map((r) => ({ sessionId: r.session_id, eventId: r.event_id, consumer: r.consumer, status: r.status }))
}

/**
 * Which of these sessions hold a run an operator has yet to settle: the run UNKNOWN, or one of
 * its effects UNKNOWN. What a delete refuses (`unresolved`); a caller asks first so that it
 * writes nothing (a Stop for the other runs) before a delete that would be refused, and a list
 * can say so before anyone tries. Callers pass only ids they own.
 */
export async function unresolvedSessions(store: Store, sessionIds: readonly string[]): Promise<string[]> {
  if (sessionIds.length === 0) return []
  const rows = await query<{ session_id: string }>(
    store.db,
    sql`select distinct j.session_id from a2_jobs j
        where j.session_id in ${sessionIds}
          and (j.status = 'UNKNOWN' or exists (select 1 from a2_effects e where e.job_id = j.id and e.status = 'UNKNOWN'))`,
  )
  return rows.map((r) => r.session_id)
}

/**
 * Deletes a session and everything it owns, in one transaction under its row lock (so no
 * append lands halfway): events and jobs by their foreign keys' cascade, and the jobs'
 * transitions and effects, which have no foreign key, by job id first. Not the owner's, or
 * gone: not_found (the caller cannot tell which). A session with an unresolved run (UNKNOWN,
 * or an effect UNKNOWN) is refused with `unresolved` and nothing is deleted: that run and its
 * effects are the evidence an operator decides from, and the call may have happened.
 */
export async function deleteSession(
  store: Store,
  sessionId: string,
  owner: string,
  options: { within?: (tx: Executor) => Promise<void> } = {},
): Promise<void> {
  await store.db.transaction(async (tx) => {
    const [row] = await query<{ owner: string }>(tx, sql`select owner from a2_sessions where id = ${sessionId} for update`)
    if (!row || row.owner !== owner) throw new A2Error('not_found', 'no such session')
    // The app's own bookkeeping about what goes (e.g. tokens already spent), in the same transaction.
    await options.within?.(tx)
    // The jobs in id order before the cascade deletes them in no set order: a lane head
    // closing now holds its row and then locks the lane's next job (sql/0004_lane_heads.ts).
    const jobs = await query<{ status: string }>(tx, sql`select id, status from a2_jobs where session_id = ${sessionId} order by id for update`)
    // The effects' rows too (after the runs', the order every settle takes), so none turns UNKNOWN between this check and the delete.
    const effects = await query<{ status: string }>(
      tx,
      sql`select e.status from a2_effects e join a2_jobs j on j.id = e.job_id where j.session_id = ${sessionId} for update of e`,
    )
    if (jobs.some((j) => j.status === 'UNKNOWN') || effects.some((e) => e.status === 'UNKNOWN')) {
      throw new A2Error('unresolved', 'This chat has a call that may or may not have happened; it can be deleted once it is settled.')
    }
    await tx.execute(sql`delete from a2_effects where job_id in (select id from a2_jobs where session_id = ${sessionId})`)
    await tx.execute(sql`delete from a2_job_transitions where job_id in (select id from a2_jobs where session_id = ${sessionId})`)
    await tx.execute(sql`delete from a2_sessions where id = ${sessionId}`)
  })
}

/**
 * Gives every session of `from` to `to` (a guest's chats to the account they signed up
 * into), in one transaction with the app's own rows (`within`); returns how many moved.
 * The sessions' row locks are taken in id order, as every append takes one: an append that
 * committed first keeps its index, and one waiting appends to the session under its new
 * owner (a push names its owner, so a push from the old identity is then not_found).
 */
export async function transferSessions(
  store: Store,
  from: string,
  to: string,
  options: { within?: (tx: Executor) => Promise<void> } = {},
): Promise<number> {
  if (from === to) return 0
  return store.db.transaction(async (tx) => {
    const locked = await query<{ id: string }>(tx, sql`select id from a2_sessions where owner = ${from} order by id for update`)
    await options.within?.(tx)
    if (locked.length === 0) return 0
    const moved = await query<{ id: string }>(tx, sql`update a2_sessions set owner = ${to} where owner = ${from} returning id`)
    return moved.length
  })
}

/** A session a search found, with the first message text that matched and its event's id (none when only the title did). */
export interface SessionMatch extends SessionSummary {
  snippet?: string
  /** The id of the event whose text matched: where to open the session. */
  matchId?: string
}

/**
 * An owner's sessions whose title, or the text of one of their events of type `in.type`
 * (payload field `in.field`), contains `text`, case-insensitively; most recently active
 * first, at most `limit` (≤ 50). A substring test with position(), not LIKE, so `%` and
 * `_` in what a person types are plain characters.
 */
export async function searchSessions(
  store: Store,
  owner: string,
  text: string,
  options: { limit?: number; in: { type: string; field: string } },
): Promise<SessionMatch[]> {
  const limit = Math.min(options.limit ?? 20, 50)
  const needle = text.toLowerCase()
  const { type, field } = options.in
  const matches = sql`e.type = ${type} and position(${needle} in lower(e.payload ->> ${field})) > 0`
  const rows = await query<{
    id: string
    title: string
    head: number
    created_at: Date | string
    updated_at: Date | string
    snippet: string | null
    match_id: string | null
  }>(
    store.db,
    sql`select s.id, s.title, s.head, s.created_at, s.updated_at, m.snippet, m.match_id
        from a2_sessions s
        left join lateral (
          select e.payload ->> ${field} as snippet, e.id as match_id
          from a2_events e where e.session_id = s.id and ${matches} order by e.index limit 1
        ) m on true
        where s.owner = ${owner}
          and (position(${needle} in lower(s.title)) > 0
               or exists (select 1 from a2_events e where e.session_id = s.id and ${matches}))
        order by s.updated_at desc, s.id desc
        limit ${limit}`,
  )
  return rows.map((r) => ({
    ...summarize({ id: r.id, title: r.title, head: r.head, createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at) }),
    ...(r.snippet ? { snippet: r.snippet } : {}),
    ...(r.match_id ? { matchId: r.match_id } : {}),
  }))
}
