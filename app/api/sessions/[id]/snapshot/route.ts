import { getChatServer } from '@/lib/chat/server'
import { parse, route, sessionIdSchema } from '@/lib/http/route'
import { foldingSnapshot } from '@/lib/http/snapshots'
import { foldChat, initialChatState } from '@/lib/chat/reducer'
import type { ChatEvent } from '@/lib/chat/contract'

export const dynamic = 'force-dynamic'

/** 5,000 events per read: one round trip per ~25 answers, bounded memory per page. */
const PAGE = 5_000

/**
 * The session folded on the server with the same reducer the browser uses, and the
 * index it is folded to. The browser starts its tail from there, so opening a session
 * with 100k events costs one small state, not 100k SSE messages.
 */
export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return route(request, async ({ userId }) => {
    const id = parse(sessionIdSchema, (await params).id, 'session id')
    const { server } = await getChatServer()
    const session = await server.sessions.get(id, userId)
    // A session is bounded by its caps (events, pushed bytes); folding one still holds its
    // state in memory, so only so many fold at once (8 concurrent 29 MB snapshots took RSS
    // from 280 MB to 870 MB before the caps).
    const release = foldingSnapshot()
    let state = initialChatState
    let frontier = -1
    try {
      while (frontier < session.head - 1) {
        const page = await server.read(id, userId, { after: frontier, before: session.head, limit: PAGE })
        if (page.length === 0) break
        state = foldChat(page as ChatEvent[], state)
        frontier = page[page.length - 1].index
      }
    } finally {
      release()
    }
    return Response.json({ session, state, frontier })
  })
}
