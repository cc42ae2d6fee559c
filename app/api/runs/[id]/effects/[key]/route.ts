import { z } from 'zod'
import { readJsonBody } from '@/lib/a2/server'
import { getChatServer } from '@/lib/chat/server'
import { parse, route } from '@/lib/http/route'

export const dynamic = 'force-dynamic'

const verdict = z.object({ done: z.boolean(), result: z.unknown().optional() }).strict()

/** An operator settles an UNKNOWN effect: it happened (done) or it did not. The run settles with it. */
export async function POST(request: Request, { params }: { params: Promise<{ id: string; key: string }> }) {
  return route(request, async ({ userId }) => {
    const { id: rawId, key } = await params
    const id = parse(z.coerce.number().int().positive(), rawId, 'run id')
    const body = parse(verdict, await readJsonBody(request, 16 * 1024), 'verdict')
    const { server } = await getChatServer()
    await server.operator.runDetail(id, userId) // ownership
    return Response.json(await server.operator.resolveEffect(id, decodeURIComponent(key), body, userId))
  })
}
