import { z } from 'zod'
import { deleteChat } from '@/lib/chat/server/delete-chat'
import { getChatServer } from '@/lib/chat/server/chat-server'
import { parse, readBody, route, sessionIdSchema } from '@/lib/http/route'

export const dynamic = 'force-dynamic'

type Params = { params: Promise<{ id: string }> }

export async function GET(request: Request, { params }: Params) {
  return route(request, async ({ userId }) => {
    const id = parse(sessionIdSchema, (await params).id, 'session id')
    const { server } = await getChatServer()
    return Response.json({ session: await server.sessions.get(id, userId) })
  })
}

const renameBody = z.object({ title: z.string().trim().min(1).max(200) }).strict()

export async function PATCH(request: Request, { params }: Params) {
  return route(request, async ({ userId }) => {
    const id = parse(sessionIdSchema, (await params).id, 'session id')
    const { title } = parse(renameBody, await readBody(request, 4096), 'body')
    const { server } = await getChatServer()
    await server.sessions.get(id, userId)
    await server.sessions.rename(id, userId, title)
    return Response.json({ session: await server.sessions.get(id, userId) })
  })
}

/**
 * Deletes a chat for good (lib/chat/server/delete-chat.ts: a running answer is stopped first; a chat
 * with an UNKNOWN effect is a 409 `unresolved`, nothing written). Someone else's chat is a
 * 404, like one that does not exist.
 */
export async function DELETE(request: Request, { params }: Params) {
  return route(request, async ({ userId }) => {
    const id = parse(sessionIdSchema, (await params).id, 'session id')
    const { server } = await getChatServer()
    await deleteChat(server, id, userId)
    return new Response(null, { status: 204 })
  })
}
