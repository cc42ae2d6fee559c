/**
 * The tool calls a dead attempt of this answer left in flight (its last `tool.state` is
 * 'running': the worker died mid-call), settled by the next attempt before it goes on. It
 * reaches each call's effect again under the same key, so lib/a2 asks the receiver (the
 * call's kind, with what the log recorded of the call: a task's id) and records the verdict; the call's
 * `tool.state` is then written from that stored record, so the answer stops saying "may have
 * happened" about a call that was settled:
 *
 * - DONE (the receiver has it, or the dead attempt recorded it) → done, with the recorded result;
 * - not done → a2 lets the key be dispatched again; it is not re-sent (the model is told it did
 *   not happen and decides again), so the record ends FAILED and the call shows it did not happen;
 * - UNKNOWN (the receiver cannot say, or the owner may still be running it) → unknown, for an operator;
 * - CANCELLED_BEFORE_DISPATCH → not started.
 */
import { EffectNotDispatched, EffectUnknown, type RunContext } from '@/lib/a2/server'
import type { Chat, ChatEvent } from '../contract'
import { callsLeftRunning, stateOfSettledCall, toolCallKey, type SettledCall } from './tool-call'
import type { ToolKind } from './tool-kind'

/** Thrown inside a settled call's effect when a2 would dispatch it again: the verdict was "not done". */
class NotSentAgain extends Error {
  constructor(key: string) {
    super(`${key}: the receiver has no record of it after its worker died; not sent again`)
  }
}

/** Settles each call through its effect and writes its state; whether any was written. */
export async function settleInFlight(ctx: RunContext<Chat, 'generate'>, later: readonly ChatEvent[], kinds: readonly ToolKind[]): Promise<boolean> {
  const calls = callsLeftRunning(ctx.event.id, later)
  for (const { call, tool, input, task } of calls) {
    const key = toolCallKey(tool, call)
    const kind = kinds.find((k) => k.name === tool)
    let outcome: SettledCall
    try {
      const result = await ctx.effect(
        key,
        async () => {
          throw new NotSentAgain(key)
        },
        // Asked with what the log recorded of the call while it ran (a task's id): the consumer's hook knows only its key.
        { reconcile: kind?.lookup && ((idempotencyKey) => kind.lookup!(idempotencyKey, { task })) },
      )
      outcome = { settled: 'done', result }
    } catch (error) {
      if (error instanceof NotSentAgain) outcome = { settled: 'not-done' }
      else if (error instanceof EffectUnknown) outcome = { settled: 'unknown' }
      else if (error instanceof EffectNotDispatched) outcome = { settled: 'not-dispatched' }
      else throw error
    }
    await ctx.append({ type: 'tool.state', payload: { of: ctx.event.id, call, tool, input, ...stateOfSettledCall(outcome) } })
  }
  return calls.length > 0
}
