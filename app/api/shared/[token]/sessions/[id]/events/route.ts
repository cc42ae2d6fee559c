/**
 * A shared chat's log as server-sent events, for whoever holds its link: read only (there is
 * no POST here, so a viewer can push nothing). The tail asks every REVOKE_CHECK_MS whether
 * its link still holds and ends when it does not; the browser's reconnect then gets a 404.
 */
import { A2Error } from '@/lib/a2'
import { sseResponse } from '@/lib/a2/server'
import { getChatServer } from '@/lib/chat/server/chat-server'
import { REVOKE_CHECK_MS, resolveShareLink } from '@/lib/chat/server/share'
import { decimal, route } from '@/lib/http/route'
import { clientAddress } from '@/lib/http/request-facts'
import { openTail } from '@/lib/http/tails'

export const dynamic = 'force-dynamic'

export async function GET(request: Request, { params }: { params: Promise<{ token: string; id: string }> }) {
  return route(
    request,
    async () => {
      const { token, id } = await params
      const shared = await resolveShareLink(token)
      if (!shared || shared.sessionId !== id) throw new A2Error('not_found', 'this link is not shared (any more)')
      const url = new URL(request.url)
      const after = decimal(request.headers.get('last-event-id'), 'Last-Event-ID', -1) ?? decimal(url.searchParams.get('after'), 'after', -1) ?? -1
      const { server } = await getChatServer()
      const ended = new AbortController()
      const batches = await server.tail(shared.sessionId, shared.owner, { after, signal: AbortSignal.any([request.signal, ended.signal]) })
      // Viewers have no identity: their tails count against their address, like a user's.
      let release: () => void
      try {
        release = openTail(`shared:${clientAddress(request)}`)
      } catch (error) {
        void batches.return(undefined)
        throw error
      }
      const check = setInterval(() => {
        resolveShareLink(token).then(
          (still) => still || ended.abort(),
          () => {}, // the store away: the tail's own reads fail and end it
        )
      }, REVOKE_CHECK_MS)
      const close = () => {
        clearInterval(check)
        release()
      }
      request.signal.addEventListener('abort', close, { once: true })
      return sseResponse(batches, AbortSignal.any([request.signal, ended.signal]), { onClose: close })
    },
    { identity: 'optional' },
  )
}
