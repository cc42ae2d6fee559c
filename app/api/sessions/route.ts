import { z } from 'zod'
import { A2Error } from '@/lib/a2'
import { getChatServer } from '@/lib/chat/server'
import { env } from '@/lib/env'
import { parse, readBody, route } from '@/lib/http/route'

export const dynamic = 'force-dynamic'

const PAGE = 50

/** My sessions, most recently active first, paged by `before` (the opaque `nextBefore` of the previous page). */
export async function GET(request: Request) {
  return route(
    request,
    async ({ userId }) => {
      const url = new URL(request.url)
      const before = parse(z.string().min(1).max(200).optional(), url.searchParams.get('before') || undefined, 'before')
      const { server } = await getChatServer()
      return Response.json(await server.sessions.list(userId, { limit: PAGE, before }))
    },
    { identity: 'create' },
  )
}

const createBody = z.object({ title: z.string().trim().max(200).optional() }).strict()

export async function POST(request: Request) {
  return route(
    request,
    async ({ userId }) => {
      const body = parse(createBody, (await readBody(request, 4096, { allowEmpty: true })) ?? {}, 'body')
      const { server } = await getChatServer()
      // A cap, not a rate: waiting does not help, so a 422 (the sidebar pages through up to this many).
      const max = env().A2_MAX_SESSIONS_PER_USER
      if ((await server.sessions.count(userId)) >= max) {
        throw new A2Error('limit_reached', `you have ${max} chats, the most one person may keep`, { details: { maxSessions: max } })
      }
      const session = await server.sessions.create(userId, { title: body.title })
      return Response.json({ session }, { status: 201 })
    },
    { identity: 'create' },
  )
}
