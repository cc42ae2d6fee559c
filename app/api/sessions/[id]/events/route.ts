/**
 * The session's log over HTTP. POST pushes (validated against the chat contract: browser
 * types only, bounded sizes, all or nothing); GET serves it as server-sent events from
 * `?after=N`, or from `Last-Event-ID` when the browser reconnects.
 */
import { z } from 'zod'
import { readJsonBody, sseResponse } from '@/lib/a2/server'
import { getChatServer } from '@/lib/chat/server'
import { parse, route, sessionIdSchema } from '@/lib/http/route'
import { limits } from '@/lib/http/limits'
import { titleFrom } from '@/lib/chat/title'

export const dynamic = 'force-dynamic'

type Params = { params: Promise<{ id: string }> }

/** 256 KiB: the contract's 64 KiB payload bound, a few events per push, JSON overhead. */
const MAX_BODY_BYTES = 256 * 1024

export async function POST(request: Request, { params }: Params) {
  return route(request, async ({ userId }) => {
    const id = parse(sessionIdSchema, (await params).id, 'session id')
    limits().pushes.take(userId)
    const body = await readJsonBody(request, MAX_BODY_BYTES)
    const generations = countType(body, 'generate')
    if (generations > 0) limits().generations.take(userId, generations)
    const { server } = await getChatServer()
    const { events, duplicate } = await server.push(id, userId, body)
    const first = events.find((e) => e.type === 'message')
    if (!duplicate && first && first.index === 0) {
      await server.sessions.rename(id, userId, titleFrom(String((first.payload as { text: string }).text)))
    }
    return Response.json({ events, duplicate }, { status: duplicate ? 200 : 201 })
  })
}

const cursor = z.coerce.number().int().min(-1).max(2 ** 31)

export async function GET(request: Request, { params }: Params) {
  return route(request, async ({ userId }) => {
    const id = parse(sessionIdSchema, (await params).id, 'session id')
    const url = new URL(request.url)
    // The browser's reconnect sends Last-Event-ID: it wins over the URL it first opened.
    const after = parse(cursor, request.headers.get('last-event-id') ?? url.searchParams.get('after') ?? -1, 'cursor')
    const { server } = await getChatServer()
    const batches = await server.tail(id, userId, { after, signal: request.signal })
    return sseResponse(batches, request.signal)
  })
}

function countType(body: unknown, type: string): number {
  const list = typeof body === 'object' && body !== null && 'events' in body ? (body as { events: unknown }).events : [body]
  return Array.isArray(list) ? list.filter((e) => typeof e === 'object' && e !== null && (e as { type?: unknown }).type === type).length : 0
}
