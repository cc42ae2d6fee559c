/**
 * The answer's end: its one `finished` and its run's end, in one transaction (`ctx.end`):
 * `reason` with COMPLETED, or `cancelled` with CANCELLED once a Stop is recorded, so a Stop lands
 * wholly before the end (the answer was stopped) or after it (a late Stop: the fold cuts what the
 * reader missed, the run stays COMPLETED), and a list read after `finished` never finds the run
 * still open. finished-agrees.integration.test.ts forces each ordering. While an effect is open
 * (a tool call's outcome unknown) the run is left to end UNKNOWN, `finished` appended alone.
 */
import { isA2Error } from '@/lib/a2'
import { isStop, type RunContext } from '@/lib/a2/server'
import type { Usage } from '@/lib/ai/usage'
import type { Chat, FinishReason } from '../contract'
import { finishedId } from './unfinished'

type Run = RunContext<Chat, 'generate'>

/** Ends answer `ctx.event` with `reason`; `attempt` is the one its steps carry (a continuation's is past its answer's earlier ones). */
export async function endAnswer(ctx: Run, reason: FinishReason, usage: Usage, attempt: number): Promise<void> {
  const ended = await ctx
    .end({ completed: [finishedEvent(ctx, reason, usage, attempt)], cancelled: [finishedEvent(ctx, 'cancelled', usage, attempt)] })
    .catch((error: unknown) => {
      // An earlier attempt's `finished` is in the log (it died before its run ended): the answer has its one.
      if (isA2Error(error, 'conflict')) return 'COMPLETED' as const
      throw error
    })
  if (ended === 'UNSETTLED') await finishAnswer(ctx, isStop(ctx.signal) ? 'cancelled' : reason, usage, attempt)
}

/** The answer's `finished`. One id per job: an answer has one, whichever of its attempts or the end hook writes it. */
function finishedEvent(ctx: Run, reason: FinishReason, usage: Usage, attempt: number) {
  return { id: finishedId(ctx.jobId), type: 'finished' as const, payload: { of: ctx.event.id, attempt, reason, usage } }
}

function finishAnswer(ctx: Run, reason: FinishReason, usage: Usage, attempt: number): Promise<unknown> {
  return ctx.append(finishedEvent(ctx, reason, usage, attempt)).catch((error) => {
    // An earlier attempt's `finished` is in the log (it died before its run ended): the answer has its one.
    if (!isA2Error(error, 'conflict')) throw error
  })
}
