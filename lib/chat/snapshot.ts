/**
 * The snapshot route's body — `{ session, state, lastSeenIndex }` as UTF-8 JSON — without
 * serializing and encoding every turn at every page open.
 *
 * A fold returns the turns it did not change as the very same objects (reducer.ts), so the
 * JSON of a run of turns stays true for as long as the run holds the same objects. The turn
 * list is cut into blocks at fixed positions and each full block's encoded JSON is kept
 * beside its first turn: an open serializes only the blocks that changed since (the newest
 * one or two) and sends the others as they are, as separate chunks (joining them into one
 * string or buffer cost as much as JSON.stringify did on this machine). JSON.stringify of the whole state
 * was 5–7 ms at 100k events (2.9 MiB) and 12–30 ms at 50k user messages (3.9 MiB), and
 * encoding it about as much again, on the route's event loop at every open.
 */
import type { ChatState, Turn } from './reducer'

/** 256 turns a block: ~80 KiB of JSON at 100k events, ~36 blocks; a changed block costs ~0.2 ms. */
const BLOCK = 256

/** A full block's turns (to check that they are still the same objects) and their JSON, by its first turn. */
const blocks = new WeakMap<Turn, { start: number; turns: Turn[]; bytes: Uint8Array }>()

const encoder = new TextEncoder()

/**
 * The body's pieces, in order, each made when asked for: together exactly
 * `JSON.stringify({ session, state, lastSeenIndex })` in UTF-8. Streamed a piece a pull, a
 * state whose blocks are not kept yet (the first open after a checkpoint was read from
 * JSON: 47 ms at 100k events, 135 ms at 50k user messages, on a loaded machine) gives the
 * event loop back between blocks instead of holding it for the whole state.
 */
export function* snapshotChunks(snapshot: { session: unknown; state: ChatState; lastSeenIndex: number }): Generator<Uint8Array> {
  yield encoder.encode(`{"session":${JSON.stringify(snapshot.session)},"state":{"turns":[`)
  const { turns } = snapshot.state
  for (let start = 0; start < turns.length; start += BLOCK) yield blockBytes(turns, start)
  yield encoder.encode(`]},"lastSeenIndex":${JSON.stringify(snapshot.lastSeenIndex)}}`)
}

/** The JSON of turns[start, start + BLOCK) without brackets; a block after the first starts with its comma. */
function blockBytes(turns: readonly Turn[], start: number): Uint8Array {
  const end = Math.min(start + BLOCK, turns.length)
  const cached = blocks.get(turns[start])
  if (cached && cached.start === start && cached.turns.length === end - start && sameObjects(cached.turns, turns, start)) return cached.bytes
  const block = turns.slice(start, end)
  const json = JSON.stringify(block)
  const bytes = encoder.encode(start === 0 ? json.slice(1, -1) : `,${json.slice(1, -1)}`)
  // The last block still grows: kept only once full.
  if (block.length === BLOCK) blocks.set(turns[start], { start, turns: block, bytes })
  return bytes
}

/** The pieces as a response body, one a pull: no copy of the whole, and the loop is free between them. */
export function chunksStream(chunks: Iterator<Uint8Array>): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = chunks.next()
      if (next.done) controller.close()
      else controller.enqueue(next.value)
    },
  })
}

function sameObjects(block: Turn[], turns: readonly Turn[], start: number): boolean {
  for (let i = 0; i < block.length; i++) if (block[i] !== turns[start + i]) return false
  return true
}
