/**
 * A session's log folded by an app's reducer, from the newest checkpoint instead of from
 * index 0: what opening a long session or answering in one costs is the events since the
 * last checkpoint plus one JSON parse of the state, not every event ever appended.
 *
 * The log is append-only and its indexes are gapless, so the fold of events 0..i never
 * changes: a checkpoint is written once and stays true. Writing one is best effort (a
 * failed write costs the next reader a longer fold, nothing else).
 *
 * A fold with a `checkpoint` codec has its state written and read in pieces, ~256 KiB of
 * them per turn of the event loop: one JSON.parse of a 50k-message chat's state (3.8 MiB)
 * held the reader's loop 59–66 ms, one JSON.stringify ~28 ms.
 */
import { sql } from 'drizzle-orm'
import { read } from './append'
import { query, type Store } from '../store/store'
import type { A2Event } from '../core/contract'
import type { CheckpointCodec, Fold, Folded, PartialCheckpoint } from '../core/types'

export type { Fold, Folded } from '../core/types'

/**
 * 1,000 events a page: ~2 ms of folding for the chat's reducer (up to ~8 ms of CPU with its
 * rows' parsing, at 100k events), so a long fold gives the event loop back between pages
 * instead of holding it. The next page is read while one folds (pagesAhead).
 */
const PAGE = 1_000

/**
 * A checkpoint after 1,000 folded events: a chat answer is ~20–200 events, so one in every
 * few answers writes one, and no reader folds more than ~1,000 events past the newest.
 */
const CHECKPOINT_AFTER = 1_000

/**
 * A session's first checkpoint after 256 folded events: a process holding no state of a
 * session without one folds its whole log, and a cold open of a 990-event chat took 28.7 ms
 * and 1.7 MiB of heap against 9.7 ms and 0.2 MiB for a fresh chat's.
 */
const FIRST_CHECKPOINT_AFTER = 256

/**
 * Three per session and fold: a reader asks for the state *before* an index (a generation's
 * history), and the newest checkpoint may lie past it when a page open wrote one meanwhile.
 */
const KEEP = 3

/**
 * The fold of the session's events before `before` (default: all), from the newest usable checkpoint.
 * `partial`: a process holding no state of it may read part of the checkpoint (the codec's
 * `partial`: what one screen needs); the result says so (`partial: true`), and such a state is
 * neither remembered nor checkpointed.
 */
export async function foldSession<S>(
  store: Store,
  sessionId: string,
  reducer: Fold<S>,
  options: { before?: number; partial?: boolean } = {},
): Promise<Folded<S> & { partial?: true }> {
  const before = options.before ?? (await headOf(store, sessionId))
  const paged = options.partial ? await foldPaged(store, sessionId, reducer, before) : undefined
  if (paged) return paged
  const loaded = await loadStart(store, sessionId, reducer, before)
  let state: S = loaded ? loaded.state : reducer.initial
  let lastSeenIndex = loaded ? loaded.atIndex : -1
  let folded = 0
  for await (const page of pagesAhead(store, sessionId, lastSeenIndex, before)) {
    state = reducer.fold(page, state)
    lastSeenIndex = page[page.length - 1].index
    folded += page.length
  }
  if (folded >= (loaded ? CHECKPOINT_AFTER : FIRST_CHECKPOINT_AFTER)) await saveCheckpoint(store, sessionId, reducer, lastSeenIndex, state)
  // A session too short for a checkpoint is remembered too: else every open of a 250-event
  // chat folded all of it again.
  else if (folded > 0) rememberLatest(sessionId, reducer.name, lastSeenIndex, state, loaded ? loaded.bytes : sizeOf(reducer, state))
  return { state, lastSeenIndex }
}

/**
 * What a state counts for in the budget of remembered states: the size its checkpoint would
 * have. Made only for a state folded from the first event and short of CHECKPOINT_AFTER events.
 */
function sizeOf<S>(reducer: Fold<S>, state: S): number {
  if (!reducer.checkpoint) return JSON.stringify(state).length
  let total = 0
  for (const piece of reducer.checkpoint.encode(state)) total += piece.length
  return total
}

/**
 * The events with `after < index < before`, a page at a time, the next page asked for before
 * this one is handed over: the database reads the next page while the caller folds this one.
 */
async function* pagesAhead(store: Store, sessionId: string, after: number, before: number): AsyncGenerator<A2Event[]> {
  const ask = (from: number) => (from < before - 1 ? read(store.db, sessionId, { after: from, before, limit: PAGE }) : undefined)
  let next = ask(after)
  try {
    while (next) {
      const page = await next
      if (page.length === 0) return
      next = ask(page[page.length - 1].index)
      yield page
    }
  } finally {
    next?.catch(() => {}) // left unread when the caller stopped early (its fold threw)
  }
}

/**
 * Checkpoint text made or read per turn of the event loop: ~256 KiB is 1–3 ms of JSON.parse
 * or JSON.stringify on this machine, so a large state holds the loop a few ms at a stretch.
 */
export const SLICE_CHARS = 256 * 1024

/** One turn of the event loop: its I/O (a stream's next chunk, a lease renewal) runs meanwhile. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * Calls `each` on every piece, pulled in order, giving the loop a turn after every
 * SLICE_CHARS of them (pulling a piece may be the work: a codec's encode). Their total size.
 */
async function inSlices(pieces: Iterable<string>, each: (piece: string) => void): Promise<number> {
  let total = 0
  let slice = 0
  for (const piece of pieces) {
    each(piece)
    total += piece.length
    slice += piece.length
    if (slice >= SLICE_CHARS) {
      await nextTurn()
      slice = 0
    }
  }
  return total
}

/**
 * Parsed checkpoints this process read or wrote, newest use last, up to 64 MiB of their JSON;
 * and per session and fold the newest state this process folded (`latest`, counted at the
 * size of the checkpoint it started from). A checkpoint never changes, so a hit skips moving
 * and parsing its text: a 100k-event chat's state is ~3 MB of JSON, 22–30 ms of JSON.parse
 * (50k user messages: 4 MB, 60–100 ms) on the caller's thread.
 */
const parsed = new Map<string, { state: unknown; bytes: number; atIndex: number }>()
const PARSED_BUDGET = 64 * 1024 * 1024
let parsedBytes = 0

/**
 * A state this process folded up to 1,000 events short of where a fold must start is used
 * instead of a newer checkpoint (another process wrote it): folding ~1,000 events is ~2 ms
 * and a round trip, parsing the checkpoint 22–100 ms that hold the event loop.
 */
const NEAR = CHECKPOINT_AFTER

/** Forgets every state this process parsed or folded: as a process that never read them (tests and diagnostics). */
export function forgetFolds(): void {
  parsed.clear()
  parsedBytes = 0
}

function remember(key: string, state: unknown, bytes: number, atIndex: number): void {
  if (bytes > PARSED_BUDGET / 4) return
  const previous = parsed.get(key)
  if (previous) parsedBytes -= previous.bytes
  parsed.delete(key)
  parsed.set(key, { state, bytes, atIndex })
  parsedBytes += bytes
  for (const [oldest, entry] of parsed) {
    if (parsedBytes <= PARSED_BUDGET) break
    parsed.delete(oldest)
    parsedBytes -= entry.bytes
  }
}

const latestKey = (sessionId: string, fold: string) => `${sessionId}\u0000${fold}\u0000latest`

function rememberLatest(sessionId: string, fold: string, atIndex: number, state: unknown, bytes: number): void {
  const key = latestKey(sessionId, fold)
  const previous = parsed.get(key)
  // A history before an older trigger does not replace a newer state (a page open's, at the head).
  if (previous && previous.atIndex > atIndex) return
  remember(key, state, bytes, atIndex)
}

/** Where a fold before `before` starts: this process's latest state when it is near enough, else the newest checkpoint. */
async function loadStart<S>(store: Store, sessionId: string, reducer: Fold<S>, before: number): Promise<Start<S> | undefined> {
  const key = latestKey(sessionId, reducer.name)
  const latest = parsed.get(key)
  const usable = latest && latest.atIndex < before ? { atIndex: latest.atIndex, state: latest.state as S, bytes: latest.bytes } : undefined
  if (usable && before - 1 - usable.atIndex <= NEAR) return touch(key, usable)
  const checkpoint = await loadCheckpoint<S>(store, sessionId, reducer, before, usable ? usable.atIndex + NEAR : -1)
  return checkpoint ?? (usable && touch(key, usable))
}

interface Start<S> {
  atIndex: number
  state: S
  /** The JSON size of the checkpoint it comes from: what it counts for in the budget. */
  bytes: number
}

function touch<T>(key: string, start: T): T {
  const entry = parsed.get(key)
  if (entry) {
    parsed.delete(key)
    parsed.set(key, entry)
  }
  return start
}

/** The newest checkpoint before `before`, if it lies past `after` (a state this process holds covers the rest). */
async function loadCheckpoint<S>(store: Store, sessionId: string, reducer: Fold<S>, before: number, after: number): Promise<Start<S> | undefined> {
  const fold = reducer.name
  const codec = reducer.checkpoint
  // A fold reads checkpoints of its own form only: pieces with a codec, one JSON text without.
  const [newest] = await query<{ at_index: number; pieces: number | null }>(
    store.db,
    sql`select at_index, pieces from a2_checkpoints
        where session_id = ${sessionId} and fold = ${fold} and at_index < ${before}
          and pieces is ${codec ? sql`not null` : sql`null`}
        order by at_index desc limit 1`,
  )
  if (!newest || newest.at_index <= after) return undefined
  const key = `${sessionId}\u0000${fold}\u0000${newest.at_index}`
  const hit = parsed.get(key)
  if (hit) return touch(key, { atIndex: newest.at_index, state: hit.state as S, bytes: hit.bytes })
  const read =
    codec && newest.pieces !== null
      ? await readPieces(store, sessionId, fold, newest.at_index, newest.pieces, codec)
      : await readWhole<S>(store, sessionId, fold, newest.at_index)
  if (!read) return undefined // pruned between the two reads: fold from the start
  remember(key, read.state, read.bytes, newest.at_index)
  return { atIndex: newest.at_index, ...read }
}

/**
 * The fold from part of the newest checkpoint, when this process holds none of the session's
 * states (else the whole fold is as cheap: nothing to read or parse) and the codec reads in
 * part. Undefined when the whole fold is the one to make: no such checkpoint, the codec's
 * `accepts` refused, or CHECKPOINT_AFTER events or more since it (the whole fold then writes
 * the checkpoint that bounds the next reader's fold).
 */
async function foldPaged<S>(store: Store, sessionId: string, reducer: Fold<S>, before: number): Promise<(Folded<S> & { partial: true }) | undefined> {
  const partial = reducer.checkpoint?.partial
  if (!partial) return undefined
  const latest = parsed.get(latestKey(sessionId, reducer.name))
  if (latest && latest.atIndex < before) return undefined
  // The newest checkpoint with its piece 0, in one round trip.
  const [newest] = await query<{ at_index: number; pieces: number; head: string }>(
    store.db,
    sql`select c.at_index, c.pieces, p.body as head
        from a2_checkpoints c
        join a2_checkpoint_pieces p on p.session_id = c.session_id and p.fold = c.fold and p.at_index = c.at_index and p.piece = 0
        where c.session_id = ${sessionId} and c.fold = ${reducer.name} and c.at_index < ${before} and c.pieces is not null
        order by c.at_index desc limit 1`,
  )
  if (!newest || parsed.has(`${sessionId}\u0000${reducer.name}\u0000${newest.at_index}`)) return undefined
  // The events since it are read while its pieces are.
  const since = eventsSince(store, sessionId, newest.at_index, before)
  since.catch(() => {}) // awaited below unless the pieces are gone
  const read = await readPart(store, sessionId, reducer.name, newest.at_index, newest.pieces, newest.head, partial)
  const events = await since
  if (!read || !events) return undefined
  const start = read.state
  let state = start
  for (let from = 0; from < events.length; from += PAGE) state = reducer.fold(events.slice(from, from + PAGE), state)
  if (!partial.accepts(start, events, state)) return undefined
  return { state, lastSeenIndex: events.at(-1)?.index ?? newest.at_index, partial: true }
}

/** The events with `after < index < before`; undefined when they are CHECKPOINT_AFTER or more. */
async function eventsSince(store: Store, sessionId: string, after: number, before: number): Promise<A2Event[] | undefined> {
  const events: A2Event[] = []
  for await (const page of pagesAhead(store, sessionId, after, before)) {
    events.push(...page)
    if (events.length >= CHECKPOINT_AFTER) return undefined
  }
  return events
}

/** The pieces the codec names from a checkpoint's piece 0, decoded with it. Undefined when one is missing (pruned meanwhile). */
async function readPart<S>(
  store: Store,
  sessionId: string,
  fold: string,
  atIndex: number,
  count: number,
  head: string,
  partial: PartialCheckpoint<S>,
): Promise<{ state: S } | undefined> {
  const wanted = [...new Set(partial.needs(head))].filter((piece) => piece > 0 && piece < count).sort((a, b) => a - b)
  const rows =
    wanted.length === 0
      ? []
      : await query<{ body: string }>(
          store.db,
          sql`select body from a2_checkpoint_pieces
              where session_id = ${sessionId} and fold = ${fold} and at_index = ${atIndex}
                and piece in (${sql.join(
                  wanted.map((piece) => sql`${piece}::int`),
                  sql`, `,
                )})
              order by piece`,
        )
  if (rows.length !== wanted.length) return undefined
  return {
    state: partial.decode(
      head,
      rows.map((row) => row.body),
    ),
  }
}

async function readWhole<S>(store: Store, sessionId: string, fold: string, atIndex: number): Promise<{ state: S; bytes: number } | undefined> {
  const [row] = await query<{ state: string }>(
    store.db,
    sql`select state from a2_checkpoints where session_id = ${sessionId} and fold = ${fold} and at_index = ${atIndex}`,
  )
  return row && { state: JSON.parse(row.state) as S, bytes: row.state.length }
}

/** A checkpoint in pieces, decoded a slice at a time. Undefined when it is gone or not whole. */
async function readPieces<S>(
  store: Store,
  sessionId: string,
  fold: string,
  atIndex: number,
  count: number,
  codec: CheckpointCodec<S>,
): Promise<{ state: S; bytes: number } | undefined> {
  const rows = await query<{ body: string }>(
    store.db,
    sql`select body from a2_checkpoint_pieces
        where session_id = ${sessionId} and fold = ${fold} and at_index = ${atIndex} order by piece`,
  )
  if (rows.length !== count) return undefined
  const decoder = codec.decoder()
  const bytes = await inSlices(
    rows.map((row) => row.body),
    (piece) => decoder.add(piece),
  )
  return { state: decoder.end(), bytes }
}

async function headOf(store: Store, sessionId: string): Promise<number> {
  const [row] = await query<{ head: number }>(store.db, sql`select head from a2_sessions where id = ${sessionId}`)
  return row?.head ?? 0
}

async function saveCheckpoint<S>(store: Store, sessionId: string, reducer: Fold<S>, atIndex: number, state: S): Promise<void> {
  const fold = reducer.name
  try {
    let bytes: number
    if (reducer.checkpoint) {
      const pieces: string[] = []
      bytes = await inSlices(reducer.checkpoint.encode(state), (piece) => pieces.push(piece))
      await writePieces(store, sessionId, fold, atIndex, pieces)
    } else {
      const json = JSON.stringify(state)
      bytes = json.length
      await query(
        store.db,
        sql`with saved as (
              insert into a2_checkpoints (session_id, fold, at_index, state)
              values (${sessionId}, ${fold}, ${atIndex}, ${json})
              on conflict do nothing
            )
            delete from a2_checkpoints
            where session_id = ${sessionId} and fold = ${fold}
              and at_index < (select at_index from a2_checkpoints where session_id = ${sessionId} and fold = ${fold}
                              order by at_index desc offset ${KEEP - 2} limit 1)`,
      )
    }
    remember(`${sessionId}\u0000${fold}\u0000${atIndex}`, state, bytes, atIndex)
    rememberLatest(sessionId, fold, atIndex, state, bytes)
  } catch (error) {
    // The session was deleted meanwhile (the foreign key), or the store blinked: the next
    // reader folds a little further. Never worth failing the read that got this far.
    console.warn(`[a2] could not save a checkpoint of session ${sessionId}:`, (error as Error).message)
  }
}

/**
 * Pieces written per statement, padded with nulls: one statement text (one prepared statement
 * per connection, not one per piece count); 32 of the chat's blocks are ~2.5 MiB.
 */
const PIECES_PER_STATEMENT = 32

/** A checkpoint's row and its pieces in one transaction: a reader sees all of them or none. */
async function writePieces(store: Store, sessionId: string, fold: string, atIndex: number, pieces: string[]): Promise<void> {
  await store.db.transaction(async (tx) => {
    const [saved] = await query(
      tx,
      sql`insert into a2_checkpoints (session_id, fold, at_index, state, pieces)
          values (${sessionId}, ${fold}, ${atIndex}, '', ${pieces.length})
          on conflict do nothing returning at_index`,
    )
    if (!saved) return // written by another reader meanwhile
    for (let from = 0; from < pieces.length; from += PIECES_PER_STATEMENT) {
      const group = Array.from({ length: PIECES_PER_STATEMENT }, (_, i) => pieces[from + i] ?? null)
      await query(
        tx,
        sql`insert into a2_checkpoint_pieces (session_id, fold, at_index, piece, body)
            select ${sessionId}, ${fold}, ${atIndex}, ${from}::int + (p.n - 1)::int, p.body
            from unnest(array[${sql.join(
              group.map((piece) => sql`${piece}::text`),
              sql`, `,
            )}]) with ordinality as p(body, n)
            where p.body is not null`,
      )
    }
    // The newest KEEP, this one included (its pieces go with their checkpoints).
    await query(
      tx,
      sql`delete from a2_checkpoints
          where session_id = ${sessionId} and fold = ${fold}
            and at_index < (select at_index from a2_checkpoints where session_id = ${sessionId} and fold = ${fold}
                            order by at_index desc offset ${KEEP - 1} limit 1)`,
    )
  })
}
