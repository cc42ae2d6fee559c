import { z } from 'zod'
import { A2Error } from '@/lib/a2'
import { keepSpentTokens } from '@/lib/chat/admission'
import { deleteShareLinks } from '@/lib/chat/share'
import { getChatServer } from '@/lib/chat/server'
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

/** How long a delete waits for a stopped answer to settle before deleting anyway (the worker is then fenced out). */
const SETTLE_MS = 2_000

/**
 * Deletes a chat for good: its log, jobs, their history and effects. A running answer is
 * stopped first, as the person's own Stop would (a `cancelled` event: the worker's signal
 * fires and the model call is closed), and given a moment to settle. Someone else's chat
 * is a 404, like one that does not exist. A chat with a call an operator has yet to settle
 * (an UNKNOWN effect) is a 409 `unresolved`, with nothing written: that run is their evidence.
 */
export async function DELETE(request: Request, { params }: Params) {
  return route(request, async ({ userId }) => {
    const id = parse(sessionIdSchema, (await params).id, 'session id')
    const { server } = await getChatServer()
    const session = await server.sessions.get(id, userId) // someone else's: not_found, as if missing
    // Asked before any Stop is appended, so a refused delete writes nothing; the delete checks again under its locks.
    if ((await server.sessions.unresolved([id])).length > 0) {
      throw new A2Error('unresolved', 'This chat has a call that may or may not have happened; it can be deleted once it is settled.')
    }
    // Runs already CANCELLING were stopped by their Stop; they only need the moment to settle.
    const running = (await server.sessions.openRuns([id])).filter((run) => run.consumer === 'generate')
    const unstopped = running.filter((run) => run.status === 'ACTIVE')
    if (unstopped.length > 0) {
      await server.append(
        id,
        ...unstopped.map((run) => ({ type: 'cancelled' as const, payload: { of: run.eventId, lastSeenIndex: session.head - 1 } })),
      )
    }
    const until = Date.now() + SETTLE_MS
    while (running.length > 0 && Date.now() < until && (await server.sessions.openRuns([id])).length > 0) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    await server.sessions.delete(id, userId, {
      within: async (tx) => {
        await keepSpentTokens(tx, id, userId)
        await deleteShareLinks(tx, id)
      },
    })
    return new Response(null, { status: 204 })
  })
}
