import { z } from 'zod'
import { getChatServer } from '@/lib/chat/server'
import { parse, route } from '@/lib/http/route'

export const dynamic = 'force-dynamic'

/** One run: its job row, every transition with its reason, and its effects. */
export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return route(request, async ({ userId }) => {
    const id = parse(z.coerce.number().int().positive(), (await params).id, 'run id')
    const { server } = await getChatServer()
    return Response.json(await server.operator.runDetail(id, userId))
  })
}
