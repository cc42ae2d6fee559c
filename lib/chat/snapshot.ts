/**
 * The snapshot route's body — `{ session, state, lastSeenIndex }` as UTF-8 JSON — without
 * serializing and encoding every turn at every page open.
 *
 * The turns are sent as their blocks' kept JSON (blocks.ts): an open serializes only the
 * blocks that changed since (the newest one or two) and sends the others as they are, as
 * separate chunks (joining them into one string or buffer cost as much as JSON.stringify did
 * on this machine). JSON.stringify of the whole state was 5–7 ms at 100k events (2.9 MiB) and
 * 12–30 ms at 50k user messages (3.9 MiB), and encoding it about as much again, on the
 * route's event loop at every open.
 */
import type { ChatState } from './reducer'
import { BLOCK, blockBytes } from './blocks'

const encoder = new TextEncoder()

/**
 * The body's pieces, in order, each made when asked for: together exactly
 * `JSON.stringify({ session, state, lastSeenIndex })` in UTF-8. Streamed a piece a pull, a
 * state whose blocks are not kept yet (folded from the log, not read from a checkpoint:
 * serializing them all was 47 ms at 100k events, 135 ms at 50k user messages, on a loaded
 * machine) gives the event loop back between blocks instead of holding it for the whole state.
 */
export function* snapshotChunks(snapshot: { session: unknown; state: ChatState; lastSeenIndex: number }): Generator<Uint8Array> {
  yield encoder.encode(`{"session":${JSON.stringify(snapshot.session)},"state":{"turns":[`)
  const { turns } = snapshot.state
  for (let start = 0; start < turns.length; start += BLOCK) yield blockBytes(turns, start)
  yield encoder.encode(`]},"lastSeenIndex":${JSON.stringify(snapshot.lastSeenIndex)}}`)
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
