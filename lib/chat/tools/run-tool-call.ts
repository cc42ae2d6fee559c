/**
 * One live tool call of an answer, end to end: the model's call is logged (a step: refused after a
 * Stop, and then the tool never runs), the tool runs through ctx.effect (intent, the dispatch
 * compare-and-set, the run's signal passed to the tool's own request), and every outcome is
 * written as `tool.state`, in the state tool-call.ts gives it from what the effect's record says.
 */
import { EffectNotDispatched, EffectUnknown, isStop, type RunContext } from '@/lib/a2/server'
import type { Chat } from '../contract'
import { stateOfLiveCall, toolCallKey, type LiveCallFailure, type ToolCall, type ToolCallOutcome, type Verdict } from './tool-call'

export interface ToolCallRun {
  ctx: RunContext<Chat, 'generate'>
  /** Puts the model's call in the log before the tool runs; false when the log refused it (the run was stopped). */
  logCall(call: ToolCall): Promise<boolean>
}

export interface ToolCallOptions<R> {
  /** Asks the receiver whether a call under this idempotency key happened (a side effect that can be asked). */
  ask?: (idempotencyKey: string) => Promise<Verdict<R>>
  /** The call changes nothing outside (a read): aborted, it is simply not done. */
  readOnly?: boolean
}

export async function runToolCall<R>(
  run: ToolCallRun,
  call: ToolCall,
  /** Runs the call; `recordTask` puts a task the receiver made of it in the log, with its running state. */
  dispatch: (idempotencyKey: string, signal: AbortSignal, recordTask: (task: string) => Promise<void>) => Promise<R>,
  options: ToolCallOptions<R> = {},
): Promise<R> {
  const { ctx } = run
  const write = ({ state, ...known }: ToolCallOutcome & { task?: string }) =>
    ctx.append({ type: 'tool.state', payload: { of: ctx.event.id, call: call.call, tool: call.tool, state, input: call.input, ...known } })
  if (!(await run.logCall(call))) {
    await write({ state: 'not-started' })
    throw new Error(`${call.tool} was not run: the answer was stopped`)
  }
  // What the receiver answered when a Stop cut the call off (the effect asks it before recording).
  let verdict: Verdict<R> | undefined
  const reconcile = options.ask ? async (key: string) => (verdict = await options.ask!(key)) : undefined
  try {
    const result = await ctx.effect<R>(
      toolCallKey(call.tool, call.call),
      async (idempotencyKey, signal) => {
        await write({ state: 'running' })
        return dispatch(idempotencyKey, signal, async (task) => void (await write({ state: 'running', task })))
      },
      { overlapSafe: options.readOnly, reconcile },
    )
    await write({ state: 'done', result })
    return result
  } catch (error) {
    // The error is what propagates; a state this attempt can no longer write (fenced out) is
    // the successor's or the operator's to tell.
    const failure: LiveCallFailure = {
      cause: error instanceof EffectNotDispatched ? 'not-dispatched' : error instanceof EffectUnknown ? 'unknown' : 'threw',
      message: error instanceof Error ? error.message : String(error),
      aborted: ctx.signal.aborted || isStop(ctx.signal, error),
      verdict,
      readOnly: options.readOnly,
    }
    await write(stateOfLiveCall(failure)).catch(() => undefined)
    throw error
  }
}
