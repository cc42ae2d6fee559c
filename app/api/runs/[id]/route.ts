import { getChatServer } from '@/lib/chat/server/chat-server'
import { operatorOf } from '@/lib/http/operator'
import { route } from '@/lib/http/route'
import { A2Error } from '@/lib/a2'
import { endUserDetail, operatorDetail, runId } from '../views'

export const dynamic = 'force-dynamic'

/** One run: its job row, every transition with its reason, and its effects (an end user: their own, trimmed). */
export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return route(
    request,
    async (identity) => {
      const { userId } = identity
      const id = runId((await params).id)
      const { server } = await getChatServer()
      if (operatorOf(request, identity)) return Response.json({ operator: true, ...operatorDetail(await server.operator.runDetail(id)) })
      if (!userId) throw new A2Error('unauthorized', 'no identity: load the app first')
      return Response.json({ operator: false, ...endUserDetail(await server.operator.runDetail(id, userId)) })
    },
    { identity: 'optional' },
  )
}
