/**
 * The snapshot route's body — `{ session, state, lastSeenIndex }` as JSON — without
 * serializing every turn at every page open.
 *
 * A fold returns the turns it did not change as the very same objects (reducer.ts), so the
 * JSON of a run of turns stays true for as long as the run holds the same objects. The turn
 * list is cut into blocks at fixed positions and each full block's JSON is kept beside its
 * first turn: an open serializes only the blocks that changed since (the newest one or
 * two). JSON.stringify of the whole state was 5–7 ms at 100k events (2.9 MiB) and 12–30 ms
 * at 50k user messages (3.9 MiB), on the route's event loop, at every open.
 */
import type { ChatState, Turn } from './reducer'

/** 256 turns a block: ~80 KiB of JSON at 100k events, ~36 blocks; a changed block costs ~0.2 ms. */
const BLOCK = 256

/** A full block's turns (to check that they are still the same objects) and their JSON, by its first turn. */
const blocks = new WeakMap<Turn, { turns: Turn[]; json: string }>()

/** Exactly `JSON.stringify(state)`. */
export function chatStateJson(state: ChatState): string {
  const { turns } = state
  const parts: string[] = []
  for (let start = 0; start < turns.length; start += BLOCK) {
    const end = Math.min(start + BLOCK, turns.length)
    const cached = blocks.get(turns[start])
    if (cached && cached.turns.length === end - start && sameObjects(cached.turns, turns, start)) {
      parts.push(cached.json)
      continue
    }
    const block = turns.slice(start, end)
    const json = JSON.stringify(block).slice(1, -1)
    // The last block still grows: kept only once full.
    if (block.length === BLOCK) blocks.set(turns[start], { turns: block, json })
    parts.push(json)
  }
  return `{"turns":[${parts.join(',')}]}`
}

/** The snapshot route's body: `JSON.stringify({ session, state, lastSeenIndex })`, the state's turns mostly from cache. */
export function snapshotJson(snapshot: { session: unknown; state: ChatState; lastSeenIndex: number }): string {
  return `{"session":${JSON.stringify(snapshot.session)},"state":${chatStateJson(snapshot.state)},"lastSeenIndex":${JSON.stringify(snapshot.lastSeenIndex)}}`
}

function sameObjects(block: Turn[], turns: readonly Turn[], start: number): boolean {
  for (let i = 0; i < block.length; i++) if (block[i] !== turns[start + i]) return false
  return true
}
