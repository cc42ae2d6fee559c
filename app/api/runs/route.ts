import { getChatServer } from '@/lib/chat/server/chat-server'
import { operatorOf } from '@/lib/http/operator'
import { route } from '@/lib/http/route'
import { A2Error } from '@/lib/a2'
import { endUserRun } from './views'

export const dynamic = 'force-dynamic'

/**
 * Runs, newest first: every user's for an operator; an end user's own, without worker ids.
 * `?scope=all` insists on the cross-user view: a 403 for an end user, never a quiet fallback.
 */
export async function GET(request: Request) {
  return route(
    request,
    async (identity) => {
      const { userId } = identity
      const operator = operatorOf(request, identity)
      if (new URL(request.url).searchParams.get('scope') === 'all' && !operator)
        throw new A2Error('forbidden', "only an operator can see every user's runs")
      const { server } = await getChatServer()
      if (operator) return Response.json({ operator: true, runs: await server.operator.listRuns({ limit: 200 }) })
      if (!userId) throw new A2Error('unauthorized', 'no identity: load the app first')
      const runs = await server.operator.listRuns({ owner: userId, limit: 200 })
      return Response.json({ operator: false, runs: runs.map(endUserRun) })
    },
    { identity: 'optional' },
  )
}
