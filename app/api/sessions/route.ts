import { z } from 'zod'
import { getChatServer } from '@/lib/chat/server'
import { parse, route } from '@/lib/http/route'
import { readJsonBody } from '@/lib/a2/server'

export const dynamic = 'force-dynamic'

const PAGE = 50

/** My sessions, newest first, paged by `before` (the updatedAt of the last one seen). */
export async function GET(request: Request) {
  return route(
    request,
    async ({ userId }) => {
      const url = new URL(request.url)
      const before = parse(z.string().datetime().optional(), url.searchParams.get('before') ?? undefined, 'before')
      const { server } = await getChatServer()
      const sessions = await server.sessions.list(userId, { limit: PAGE, before })
      const nextBefore = sessions.length === PAGE ? sessions[sessions.length - 1].updatedAt : undefined
      return Response.json({ sessions, ...(nextBefore ? { nextBefore } : {}) })
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
