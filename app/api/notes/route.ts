import { getChatServer } from '@/lib/chat/server/chat-server'
import { route } from '@/lib/http/route'

export const dynamic = 'force-dynamic'

/** The notes the assistant saved for me (the saveNote tool's outbox), newest first. */
export async function GET(request: Request) {
  return route(request, async ({ userId }) => {
    const { notes } = await getChatServer()
    const rows = await notes.list(userId, 200)
    return Response.json({ notes: rows.map(({ owner: _owner, ...note }) => note) })
  })
}
