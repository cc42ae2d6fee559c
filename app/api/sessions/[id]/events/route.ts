/**
 * The session's log over HTTP. POST pushes (validated against the chat contract: browser
 * types only, bounded sizes, all or nothing; then rate limits by address and by user,
 * references, running answers and the session's caps); GET serves it as server-sent events
 * from `?after=N`, or from `Last-Event-ID` when the browser reconnects.
 */
import { sseResponse } from '@/lib/a2/server'
import { getChatServer } from '@/lib/chat/server/chat-server'
import { admitChatPush, referencedIds } from '@/lib/chat/server/admission'
import { decimal, parse, readBody, route, sessionIdSchema } from '@/lib/http/route'
import { takeAll } from '@/lib/http/limits'
import { clientAddress } from '@/lib/http/request-facts'
import { openTail } from '@/lib/http/tails'
import { env } from '@/lib/env'
import { titleFrom } from '@/lib/chat/server/title'
import { admitMessageFiles } from '@/lib/chat/server/file-admission'
import { getFiles } from '@/lib/files'

export const dynamic = 'force-dynamic'

type Params = { params: Promise<{ id: string }> }

/** 256 KiB: the contract's 64 KiB payload bound, a few events per push, JSON overhead. */
const MAX_BODY_BYTES = 256 * 1024

export async function POST(request: Request, { params }: Params) {
  return route(request, async ({ userId }) => {
    const id = parse(sessionIdSchema, (await params).id, 'session id')
    const address = clientAddress(request)
    // The two limits (a row each, one statement) are taken while the push reads the session,
    // and admission waits for them: a Stop waits for one round trip there, not two in turn. A
    // refused push has written nothing but its limit rows either way.
    const limited = takeAll([
      ['pushesByAddress', address, 1],
      ['pushesByUser', userId, 1],
    ])
    limited.catch(() => {}) // awaited below, whichever way the push goes
    const pushed = pushAdmitted(request, id, userId, address, limited)
    // Past its limit, a client hears 429 whatever else was wrong with its push.
    await Promise.allSettled([limited, pushed])
    await limited
    const { events, duplicate, server } = await pushed
    const first = events.find((e) => e.type === 'message')
    if (!duplicate && first && first.index === 0) {
      // Derived from the message every tab already has in the log: the row only, no a2.renamed.
      const { text, files } = first.payload as { text: string; files?: Array<{ name: string }> }
      await server.sessions.rename(id, userId, titleFrom(text, files), { event: false })
    }
    return Response.json({ events, duplicate }, { status: duplicate ? 200 : 201 })
  })
}

async function pushAdmitted(request: Request, id: string, userId: string, address: string, limited: Promise<unknown>) {
  const body = await readBody(request, MAX_BODY_BYTES)
  const { server } = await getChatServer()
  const { events, duplicate } = await server.push(id, userId, body, {
    caps: { maxEvents: env().A2_MAX_EVENTS_PER_SESSION, maxPushedBytes: env().A2_MAX_PUSHED_BYTES_PER_SESSION },
    refersTo: referencedIds,
    admit: async (inputs, found) => {
      await limited
      await admitChatPush(server, userId, inputs, found, { id })
      await admitMessageFiles(await getFiles(), userId, id, inputs)
      const generations = inputs.filter((input) => input.type === 'generate').length
      await takeAll([
        ['generationsByAddress', address, generations],
        ['generationsByUser', userId, generations],
      ])
    },
  })
  return { events, duplicate, server }
}

export async function GET(request: Request, { params }: Params) {
  return route(request, async ({ userId }) => {
    const id = parse(sessionIdSchema, (await params).id, 'session id')
    const url = new URL(request.url)
    // The browser's reconnect sends Last-Event-ID: it wins over the URL it first opened.
    // An empty one (or an empty `after=`) is no cursor: read from the start, never from 0.
    const after = decimal(request.headers.get('last-event-id'), 'Last-Event-ID', -1) ?? decimal(url.searchParams.get('after'), 'after', -1) ?? -1
    const { server } = await getChatServer()
    // The tail's owner check is the one read of the session: a 404 before a place is taken.
    // Nothing is subscribed until the stream is read, so a tail refused its place holds nothing.
    const batches = await server.tail(id, userId, { after, signal: request.signal })
    let release: () => void
    try {
      release = openTail(userId)
    } catch (error) {
      void batches.return(undefined)
      throw error
    }
    request.signal.addEventListener('abort', release, { once: true })
    return sseResponse(batches, request.signal, { onClose: release })
  })
}
