import { z } from 'zod'
import { getChatServer } from '@/lib/chat/server/chat-server'
import { requireOperator } from '@/lib/http/operator'
import { parse, readBody, route } from '@/lib/http/route'
import { recordResolution } from '@/lib/http/audit'
import { isA2Error } from '@/lib/a2'
import { runId } from '../../../views'
import { recordToolVerdict } from '@/lib/chat/tools/operator-verdict'

export const dynamic = 'force-dynamic'

const verdict = z.object({ done: z.boolean(), result: z.unknown().optional() }).strict()

/**
 * An operator settles an UNKNOWN effect: it happened (done) or it did not; the run settles
 * with it. Operators only (an end user gets a 403, even on their own run), and every
 * attempt is audited: who, when, the verdict, and how it ended.
 */
export async function POST(request: Request, { params }: { params: Promise<{ id: string; key: string }> }) {
  return route(
    request,
    async (identity) => {
      const operator = requireOperator(request, identity)
      const { id: rawId, key: rawKey } = await params
      const id = runId(rawId)
      // Next hands the segment over decoded already.
      const key = parse(z.string().min(1).max(200), rawKey, 'effect key')
      const body = parse(verdict, await readBody(request, 16 * 1024), 'verdict')
      const { server } = await getChatServer()
      const { job } = await server.operator.runDetail(id) // 404 for a run that does not exist
      try {
        const resolved = await server.operator.resolveEffect(id, key, body, operator)
        await recordResolution(server.store, { operator, jobId: id, effectKey: key, verdict: body, outcome: String(resolved.status ?? 'resolved') })
        // A tool call the answer showed as "may have happened" now shows what the operator decided.
        await recordToolVerdict(server, job, key, body)
        return Response.json(resolved)
      } catch (error) {
        await recordResolution(server.store, {
          operator,
          jobId: id,
          effectKey: key,
          verdict: body,
          outcome: isA2Error(error) ? `refused:${error.code}` : 'error',
        })
        throw error
      }
    },
    { identity: 'optional' },
  )
}
