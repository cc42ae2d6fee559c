/**
 * A tool call's state as its stored effect says it (the a2_effects row, as the operator view
 * reads it): what a run settled without its handler (the drain after a Stop, the sweep after
 * the last attempt's crash) writes for the calls its answer still shows running.
 */
import type { ChatEvent, ToolCallState } from '../contract'

export interface StoredEffect {
  key: string
  status: string
  result: unknown
  error: unknown
}

type ToolState = Extract<ChatEvent, { type: 'tool.state' }>['payload']

/** `tool:<tool>:<call>`, the key runToolCall gives a tool call's effect (tool-call.ts). */
const TOOL_EFFECT = /^tool:([^:]+):(.+)$/

/** The state a settled effect shows; undefined while it is not settled (INTENT, DISPATCHED) or not a tool call's. */
export function stateOfEffect(effect: StoredEffect): Pick<ToolState, 'state' | 'result' | 'error' | 'settle'> | undefined {
  if (!TOOL_EFFECT.test(effect.key)) return undefined
  const error = (effect.error ?? {}) as { message?: string; reconciled?: string }
  const byStatus: Record<string, Pick<ToolState, 'state' | 'result' | 'error' | 'settle'> | undefined> = {
    DONE: { state: 'done', result: (effect.result as { value?: unknown } | null)?.value },
    // The receiver, asked, had no record of it: it did not happen. Any other failure is one.
    FAILED: error.reconciled === 'not done' ? { state: 'cancelled' } : { state: 'failed', error: (error.message ?? 'failed').slice(0, 2_000) },
    UNKNOWN: { state: 'unknown' as ToolCallState, settle: 'operator' },
    CANCELLED_BEFORE_DISPATCH: { state: 'not-started' },
  }
  return byStatus[effect.status]
}

/** The `tool.state` events that tell the answer's running calls what their stored effects say. */
export function settledStates(of: string, later: readonly ChatEvent[], effects: readonly StoredEffect[]): ToolState[] {
  const last = new Map<string, ToolState>()
  for (const event of later) if (event.type === 'tool.state' && event.payload.of === of) last.set(event.payload.call, event.payload)
  const states: ToolState[] = []
  for (const shown of last.values()) {
    if (shown.state !== 'running') continue
    const effect = effects.find((e) => e.key === `tool:${shown.tool}:${shown.call}`)
    const settled = effect && stateOfEffect(effect)
    if (settled) states.push({ of, call: shown.call, tool: shown.tool, input: shown.input, ...settled })
  }
  return states
}
