/**
 * The snapshot route's answers: opening a chat gets its first screen (first-screen.ts) with
 * the head index the tail starts after; `?above=<turn id>` and `?below=<turn id>` get one
 * page of older turns, or of the turns under an older version. Each is a few dozen turns of
 * JSON whatever the history holds: the whole fold was 6.3 MB at 2,500 short turns.
 */
import { z } from 'zod'
import { A2Error } from '@/lib/a2'
import { parse } from '@/lib/http/route'
import type { ChatState } from '../fold/reducer'
import { firstScreen, pageAbove, pageBelow } from '../fold/first-screen'

/** A turn id as the log holds it (an event id: at most 64 characters). */
const turnId = z.string().min(1).max(64)

export type SnapshotAsk = { kind: 'first' } | { kind: 'above' | 'below'; id: string }

/** What the request asks for: the first screen, or one page above or below a turn (not both). Malformed: a 400. */
export function snapshotAsk(request: Request): SnapshotAsk {
  const params = new URL(request.url).searchParams
  const asks = (['above', 'below'] as const).filter((kind) => params.has(kind))
  if (asks.length === 0) return { kind: 'first' }
  if (asks.length > 1 || params.getAll(asks[0]).length > 1) throw new A2Error('bad_request', 'ask for one page: above or below one turn')
  return { kind: asks[0], id: parse(turnId, params.get(asks[0]), `${asks[0]} (a turn id)`) }
}

/**
 * How the fold behind `ask` may be read: the first screen from part of the newest checkpoint
 * when the process holds no state of the chat (paged-checkpoint.ts: a cold open of 100k events
 * read and decoded the whole checkpoint, 98 ms and 11 MiB); a page from the whole fold.
 */
export function snapshotFold(ask: SnapshotAsk): { partial: boolean } {
  return { partial: ask.kind === 'first' }
}

/** The JSON answer for `ask` from the chat's fold; a page of a turn the chat does not hold is a 422. */
export function snapshotResponse(ask: SnapshotAsk, folded: { session: unknown; state: ChatState; lastSeenIndex: number }): Response {
  if (ask.kind === 'first') {
    const { turns, older, continues } = firstScreen(folded.state)
    return Response.json({ session: folded.session, state: { turns }, lastSeenIndex: folded.lastSeenIndex, older, continues })
  }
  const page = ask.kind === 'above' ? pageAbove(folded.state, ask.id) : pageBelow(folded.state, ask.id)
  if (!page) throw new A2Error('invalid_reference', `this chat has no turn ${JSON.stringify(ask.id)} to page from`)
  return Response.json(page)
}
