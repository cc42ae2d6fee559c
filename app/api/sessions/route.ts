import { z } from 'zod'
import { A2Error } from '@/lib/a2'
import { getChatServer } from '@/lib/chat/server/chat-server'
import { env } from '@/lib/env'
import { parse, readBody, route } from '@/lib/http/route'

export const dynamic = 'force-dynamic'

const PAGE = 50
/** Search answers one bounded page: the sidebar shows the best few, not an archive. */
const SEARCH_LIMIT = 30
const searchQuery = z.string().trim().min(1).max(200)

/**
 * My sessions, most recently active first, paged by `before` (the opaque `nextBefore` of the
 * previous page), each marked `generating` while an answer is still being written, and
 * `unresolved` while a call of it waits for an operator (it cannot be deleted then). With
 * `q`: my sessions whose title or message text contains it (one page, with the matching text).
 */
export async function GET(request: Request) {
  return route(
    request,
    async ({ userId }) => {
      const url = new URL(request.url)
      const q = url.searchParams.get('q')
      const { server } = await getChatServer()
      if (q !== null) {
        const text = parse(searchQuery, q, 'search query')
        const sessions = await server.sessions.search(userId, text, { limit: SEARCH_LIMIT, in: { type: 'message', field: 'text' } })
        return Response.json({ sessions: await markGenerating(server, sessions) })
      }
      const before = parse(z.string().min(1).max(200).optional(), url.searchParams.get('before') || undefined, 'before')
      const page = await server.sessions.list(userId, { limit: PAGE, before })
      return Response.json({ ...page, sessions: await markGenerating(server, page.sessions) })
    },
    { identity: 'create' },
  )
}

/**
 * Sets `generating` on sessions with a `generate` run not yet settled, and `unresolved` (only
 * when true) on those with a call an operator has yet to settle (ids the caller owns).
 */
async function markGenerating<S extends { id: string }>(
  server: Awaited<ReturnType<typeof getChatServer>>['server'],
  sessions: S[],
): Promise<Array<S & { generating: boolean; unresolved?: true }>> {
  const ids = sessions.map((s) => s.id)
  const [open, unresolved] = await Promise.all([server.sessions.openRuns(ids), server.sessions.unresolved(ids)])
  const busy = new Set(open.filter((run) => run.consumer === 'generate').map((run) => run.sessionId))
  const waiting = new Set(unresolved)
  return sessions.map((s) => ({ ...s, generating: busy.has(s.id), ...(waiting.has(s.id) ? { unresolved: true as const } : {}) }))
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
