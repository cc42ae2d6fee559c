import { getChatServer } from '@/lib/chat/server'
import { parse, route, sessionIdSchema } from '@/lib/http/route'
import { foldingSnapshot } from '@/lib/http/snapshots'
import { chatFold } from '@/lib/chat/checkpoint'
import { chunksStream, snapshotChunks } from '@/lib/chat/snapshot'

export const dynamic = 'force-dynamic'

/**
 * The session folded on the server with the same reducer the browser uses, and the last
 * index it is folded to (`lastSeenIndex`, -1 for none). The browser starts its tail after it, so opening a session
 * with 100k events costs one small state, not 100k SSE messages; and the server folds
 * only the events since the newest checkpoint of that fold, not all 100k. The session row
 * is read once, by the fold (its head bounds the fold), and the body is mostly blocks of
 * encoded JSON kept since an earlier open (lib/chat/snapshot.ts).
 */
export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return route(request, async ({ userId }) => {
    const id = parse(sessionIdSchema, (await params).id, 'session id')
    const { server } = await getChatServer()
    // A session is bounded by its caps (events, pushed bytes); folding one still holds its
    // state in memory, so only so many fold at once (8 concurrent 29 MB snapshots took RSS
    // from 280 MB to 870 MB before the caps).
    const release = foldingSnapshot()
    try {
      const { session, state, lastSeenIndex } = await server.fold(id, userId, chatFold)
      return new Response(chunksStream(snapshotChunks({ session, state, lastSeenIndex })), { headers: { 'content-type': 'application/json' } })
    } finally {
      release()
    }
  })
}
