import { getChatServer } from '@/lib/chat/server'
import { parse, route, sessionIdSchema } from '@/lib/http/route'
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
    let state = initialChatState
    let frontier = -1
    while (frontier < session.head - 1) {
      const page = await server.read(id, userId, { after: frontier, before: session.head, limit: PAGE })
      if (page.length === 0) break
      state = foldChat(page as ChatEvent[], state)
      frontier = page[page.length - 1].index
    }
    return Response.json({ session, state, frontier })
  })
}
