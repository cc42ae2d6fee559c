/**
 * A session's log folded by an app's reducer, from the newest checkpoint instead of from
 * index 0: what opening a long session or answering in one costs is the events since the
 * last checkpoint plus one JSON parse of the state, not every event ever appended.
 *
 * The log is append-only and its indexes are gapless, so the fold of events 0..i never
 * changes: a checkpoint is written once and stays true. Writing one is best effort (a
 * failed write costs the next reader a longer fold, nothing else).
 */
import { sql } from 'drizzle-orm'
import { read } from './log'
import { readPages } from './pages'
import { query, type Store } from './store'
import type { Fold, Folded } from './types'

export type { Fold, Folded } from './types'

/**
 * 1,000 events a page: ~2 ms of folding for the chat's reducer, so a long fold gives the
 * event loop back between pages (every page is a round trip) instead of holding it.
 */
const PAGE = 1_000

/**
 * A checkpoint after 1,000 folded events: a chat answer is ~20–200 events, so one in every
 * few answers writes one, and no reader folds more than ~1,000 events past the newest.
 */
const CHECKPOINT_AFTER = 1_000

/**
 * Three per session and fold: a reader asks for the state *before* an index (a generation's
 * history), and the newest checkpoint may lie past it when a page open wrote one meanwhile.
 */
const KEEP = 3

/** The fold of the session's events before `before` (default: all), from the newest usable checkpoint. */
export async function foldSession<S>(store: Store, sessionId: string, reducer: Fold<S>, options: { before?: number } = {}): Promise<Folded<S>> {
  const before = options.before ?? (await headOf(store, sessionId))
  const loaded = await loadStart<S>(store, sessionId, reducer.name, before)
  let state: S = loaded ? loaded.state : reducer.initial
  let lastSeenIndex = loaded ? loaded.atIndex : -1
  let folded = 0
  for await (const page of readPages((range) => read(store.db, sessionId, range), { after: lastSeenIndex, before, pageSize: PAGE })) {
    state = reducer.fold(page, state)
    lastSeenIndex = page[page.length - 1].index
    folded += page.length
  }
  if (folded >= CHECKPOINT_AFTER) await saveCheckpoint(store, sessionId, reducer.name, lastSeenIndex, state)
  else if (folded > 0 && loaded) rememberLatest(sessionId, reducer.name, lastSeenIndex, state, loaded.bytes)
  return { state, lastSeenIndex }
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
async function loadStart<S>(store: Store, sessionId: string, fold: string, before: number): Promise<Start<S> | undefined> {
  const key = latestKey(sessionId, fold)
  const latest = parsed.get(key)
  const usable = latest && latest.atIndex < before ? { atIndex: latest.atIndex, state: latest.state as S, bytes: latest.bytes } : undefined
  if (usable && before - 1 - usable.atIndex <= NEAR) return touch(key, usable)
  const checkpoint = await loadCheckpoint<S>(store, sessionId, fold, before, usable ? usable.atIndex + NEAR : -1)
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
async function loadCheckpoint<S>(store: Store, sessionId: string, fold: string, before: number, after: number): Promise<Start<S> | undefined> {
  const [newest] = await query<{ at_index: number }>(
    store.db,
    sql`select at_index from a2_checkpoints
        where session_id = ${sessionId} and fold = ${fold} and at_index < ${before}
        order by at_index desc limit 1`,
  )
  if (!newest || newest.at_index <= after) return undefined
  const key = `${sessionId}\u0000${fold}\u0000${newest.at_index}`
  const hit = parsed.get(key)
  if (hit) return touch(key, { atIndex: newest.at_index, state: hit.state as S, bytes: hit.bytes })
  const [row] = await query<{ state: string }>(
    store.db,
    sql`select state from a2_checkpoints where session_id = ${sessionId} and fold = ${fold} and at_index = ${newest.at_index}`,
  )
  if (!row) return undefined // pruned between the two reads: fold from the start
  const state = JSON.parse(row.state) as S
  remember(key, state, row.state.length, newest.at_index)
  return { atIndex: newest.at_index, state, bytes: row.state.length }
}

async function headOf(store: Store, sessionId: string): Promise<number> {
  const [row] = await query<{ head: number }>(store.db, sql`select head from a2_sessions where id = ${sessionId}`)
  return row?.head ?? 0
}

async function saveCheckpoint(store: Store, sessionId: string, fold: string, atIndex: number, state: unknown): Promise<void> {
  try {
    const json = JSON.stringify(state)
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
    remember(`${sessionId}\u0000${fold}\u0000${atIndex}`, state, json.length, atIndex)
    rememberLatest(sessionId, fold, atIndex, state, json.length)
  } catch (error) {
    // The session was deleted meanwhile (the foreign key), or the store blinked: the next
    // reader folds a little further. Never worth failing the read that got this far.
    console.warn(`[a2] could not save a checkpoint of session ${sessionId}:`, (error as Error).message)
  }
}
