/**
 * A file of a shared chat, for whoever holds its live link: only a file a message of that chat
 * names. Revoking the link (or deleting the chat) makes this a 404 at once. No identity is read.
 */
import { A2Error } from '@/lib/a2'
import { resolveShareLink } from '@/lib/chat/server/share'
import { getFiles } from '@/lib/files'
import { serveFile } from '@/lib/files/serve'
import { route } from '@/lib/http/route'
import { z } from 'zod'

export const dynamic = 'force-dynamic'

export async function GET(request: Request, { params }: { params: Promise<{ token: string; id: string }> }) {
  return route(
    request,
    async () => {
      const { token, id } = await params
      const shared = await resolveShareLink(token)
      if (!shared || !z.string().uuid().safeParse(id).success) throw new A2Error('not_found', 'this link is not shared (any more)')
      const files = await getFiles()
      return serveFile(request, await files.forSharedChat(id, shared.sessionId), files)
    },
    { identity: 'optional' },
  )
}
