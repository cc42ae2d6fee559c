import { getChatServer } from '@/lib/chat/server'
import { route } from '@/lib/http/route'

export const dynamic = 'force-dynamic'

/** The operator view of my runs: status, attempts, cancel version. */
export async function GET(request: Request) {
  return route(request, async ({ userId }) => {
    const { server } = await getChatServer()
    return Response.json({ runs: await server.operator.listRuns({ owner: userId, limit: 200 }) })
  })
}
