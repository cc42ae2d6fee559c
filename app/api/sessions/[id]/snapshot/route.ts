import { getChatServer } from '@/lib/chat/server/chat-server'
import { parse, route, sessionIdSchema } from '@/lib/http/route'
import { foldingSnapshot } from '@/lib/http/snapshots'
import { chatFold } from '@/lib/chat/fold/checkpoint'
import { snapshotAsk, snapshotFold, snapshotResponse } from '@/lib/chat/server/snapshot'

export const dynamic = 'force-dynamic'

/**
 * The session's first screen — its newest turns folded on the server with the same reducer
 * the browser uses, and the last index folded (`lastSeenIndex`, -1 for none) that the tail
 * starts after — or, with `?above=` / `?below=` a turn id, one page of older turns
 * (lib/chat/server/snapshot.ts). The server folds only the events since the newest checkpoint of
 * that fold, and sends a few dozen turns whatever the history holds.
 */
export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return route(request, async ({ userId }) => {
    const id = parse(sessionIdSchema, (await params).id, 'session id')
    const ask = snapshotAsk(request)
    const { server } = await getChatServer()
    // A session is bounded by its caps (events, pushed bytes); folding one still holds its
    // state in memory, so only so many fold at once (8 concurrent 29 MB snapshots took RSS
    // from 280 MB to 870 MB before the caps).
    const release = foldingSnapshot()
    try {
      return snapshotResponse(ask, await server.fold(id, userId, chatFold, snapshotFold(ask)))
    } finally {
      release()
    }
  })
}
