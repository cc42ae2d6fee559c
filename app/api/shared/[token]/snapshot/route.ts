import { A2Error } from '@/lib/a2'
import { getChatServer } from '@/lib/chat/server/chat-server'
import { chatFold } from '@/lib/chat/fold/checkpoint'
import { resolveShareLink } from '@/lib/chat/server/share'
import { snapshotAsk, snapshotFold, snapshotResponse } from '@/lib/chat/server/snapshot'
import { route } from '@/lib/http/route'
import { foldingSnapshot } from '@/lib/http/snapshots'

export const dynamic = 'force-dynamic'

/**
 * A shared chat's first screen or a page of it, for whoever holds its link: as the owner's snapshot, with only the
 * session's id and title (not its owner). An unknown, malformed or revoked link is a 404.
 * No identity is read or minted.
 */
export async function GET(request: Request, { params }: { params: Promise<{ token: string }> }) {
  return route(
    request,
    async () => {
      const shared = await resolveShareLink((await params).token)
      if (!shared) throw new A2Error('not_found', 'this link is not shared (any more)')
      const ask = snapshotAsk(request)
      const { server } = await getChatServer()
      const release = foldingSnapshot()
      try {
        const { session, state, lastSeenIndex } = await server.fold(shared.sessionId, shared.owner, chatFold, snapshotFold(ask))
        return snapshotResponse(ask, { session: { id: session.id, title: session.title }, state, lastSeenIndex })
      } finally {
        release()
      }
    },
    { identity: 'optional' },
  )
}
