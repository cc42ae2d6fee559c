import { z } from 'zod'
import { getChatServer } from '@/lib/chat/server'
import { parse, route } from '@/lib/http/route'
import { readJsonBody } from '@/lib/a2/server'

export const dynamic = 'force-dynamic'

const PAGE = 50

/** My sessions, most recently active first, paged by `before` (the opaque `nextBefore` of the previous page). */
export async function GET(request: Request) {
  return route(
    request,
    async ({ userId }) => {
      const url = new URL(request.url)
      const before = parse(z.string().max(200).optional(), url.searchParams.get('before') ?? undefined, 'before')
      const { server } = await getChatServer()
      return Response.json(await server.sessions.list(userId, { limit: PAGE, before }))
    },
    { createIdentity: true },
  )
}

const createBody = z.object({ title: z.string().trim().max(200).optional() }).strict()

export async function POST(request: Request) {
  return route(
    request,
    async ({ userId }) => {
      const hasBody = Number(request.headers.get('content-length') ?? 0) > 0
      const body = parse(createBody, hasBody ? await readJsonBody(request, 4096) : {}, 'body')
      const { server } = await getChatServer()
      const session = await server.sessions.create(userId, { title: body.title })
      return Response.json({ session }, { status: 201 })
    },
    { createIdentity: true },
  )
}
