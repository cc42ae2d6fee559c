/**
 * One tool call of an answer, end to end: the model's call is logged (a step: refused after a
 * Stop, and then the tool never runs), the tool runs through ctx.effect (intent, the dispatch
 * compare-and-set, the run's signal passed to the tool's own request), and every outcome is
 * written as `tool.state`, from what the effect's record says happened:
 *
 * - EffectNotDispatched (a Stop before dispatch) → not-started: nothing happened;
 * - returned → done, with its result;
 * - aborted by a Stop mid-call: the receiver is asked (the effect's reconcile) → done (it had
 *   it), cancelled (it has no record), or unknown (it cannot say: the run waits for an operator);
 * - EffectUnknown (a dead attempt's call nobody could settle) → unknown, for an operator;
 * - any other throw → failed.
 *
 * A call a Stop may have let reach its receiver is never shown as failed.
 */
import { EffectNotDispatched, EffectUnknown, isStop, type RunContext } from '@/lib/a2/server'
import type { Chat, ToolCallState } from '../contract'

export interface ToolCall {
  call: string
  tool: string
  input: unknown
}

export interface ToolCallRun {
  ctx: RunContext<Chat, 'generate'>
  /** Puts the model's call in the log before the tool runs; false when the log refused it (the run was stopped). */
  logCall(call: ToolCall): Promise<boolean>
}

/** A receiver's answer about one call: it has it (with what the call returns), it has not, or it cannot say. */
export type Verdict<R> = { done: true; result: R } | { done: false } | 'unknown'

export interface ToolCallOptions<R> {
  /** Asks the receiver whether a call under this idempotency key happened (a side effect that can be asked). */
  ask?: (idempotencyKey: string) => Promise<Verdict<R>>
  /** The call changes nothing outside (a read): aborted, it is simply not done. */
  readOnly?: boolean
}

/** The effect key of a tool call: the tool and the model's call id (stable across a retry of the same call). */
export const toolEffectKey = (tool: string, call: string) => `tool:${tool}:${call}`

export async function runToolCall<R>(
  run: ToolCallRun,
  call: ToolCall,
  dispatch: (idempotencyKey: string, signal: AbortSignal) => Promise<R>,
  options: ToolCallOptions<R> = {},
): Promise<R> {
  const { ctx } = run
  const state = (value: ToolCallState, extra: { result?: unknown; error?: string; settle?: 'reconcile' | 'operator' } = {}) =>
    ctx.append({ type: 'tool.state', payload: { of: ctx.event.id, call: call.call, tool: call.tool, state: value, input: call.input, ...extra } })
  if (!(await run.logCall(call))) {
    await state('not-started')
    throw new Error(`${call.tool} was not run: the answer was stopped`)
  }
  // What the receiver answered when a Stop cut the call off (the effect asks it before recording).
  let verdict: Verdict<R> | undefined
  const reconcile = options.ask ? async (key: string) => (verdict = await options.ask!(key)) : undefined
  try {
    const result = await ctx.effect<R>(
      toolEffectKey(call.tool, call.call),
      async (idempotencyKey, signal) => {
        await state('running')
        return dispatch(idempotencyKey, signal)
      },
      { overlapSafe: options.readOnly, reconcile },
    )
    await state('done', { result })
    return result
  } catch (error) {
    // The error is what propagates; a state this attempt can no longer write (fenced out) is
    // the successor's or the operator's to tell.
    await state(...outcomeOf(error, ctx.signal.aborted || isStop(ctx.signal, error), verdict, options as ToolCallOptions<unknown>)).catch(
      () => undefined,
    )
    throw error
  }
}

/** What a call that threw shows, from why it threw and, for one cut off mid-flight, what its receiver answered. */
function outcomeOf(
  error: unknown,
  aborted: boolean,
  verdict: Verdict<unknown> | undefined,
  options: ToolCallOptions<unknown>,
): [ToolCallState, { result?: unknown; error?: string; settle?: 'reconcile' | 'operator' }?] {
  if (error instanceof EffectNotDispatched) return ['not-started']
  if (error instanceof EffectUnknown) return ['unknown', { settle: 'operator' }]
  if (!aborted) return ['failed', { error: (error instanceof Error ? error.message : String(error)).slice(0, 2_000) }]
  // Cut off by a Stop or a lost claim: a read changed nothing; a side effect is what its receiver says.
  if (options.readOnly) return ['cancelled']
  if (verdict && verdict !== 'unknown') return verdict.done ? ['done', { result: verdict.result }] : ['cancelled']
  return ['unknown', { settle: 'operator' }]
}
