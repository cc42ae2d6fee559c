/**
 * The chat's read-only link. POST makes one (and ends an older one): its path is in the
 * answer, once; GET says whether one is live; DELETE revokes it. Owner only: another
 * user's chat is a 404, as everywhere.
 */
import { getChatServer } from '@/lib/chat/server/chat-server'
import { createShareLink, hasShareLink, revokeShareLink } from '@/lib/chat/server/share'
import { parse, route, sessionIdSchema } from '@/lib/http/route'

export const dynamic = 'force-dynamic'

type Params = { params: Promise<{ id: string }> }

async function ownedSession(params: Params['params'], userId: string): Promise<string> {
  const id = parse(sessionIdSchema, (await params).id, 'session id')
  const { server } = await getChatServer()
  await server.sessions.get(id, userId)
  return id
}

export async function GET(request: Request, { params }: Params) {
  return route(request, async ({ userId }) => Response.json({ shared: await hasShareLink(await ownedSession(params, userId), userId) }))
}

export async function POST(request: Request, { params }: Params) {
  return route(request, async ({ userId }) => {
    const token = await createShareLink(await ownedSession(params, userId), userId)
    return Response.json({ path: `/s/${token}` }, { status: 201 })
  })
}

export async function DELETE(request: Request, { params }: Params) {
  return route(request, async ({ userId }) => {
    await revokeShareLink(await ownedSession(params, userId), userId)
    return new Response(null, { status: 204 })
  })
}
