/**
 * A tool call's state as its stored effect says it (the a2_effects row, as the operator view
 * reads it): what a run settled without its handler (the drain after a Stop, the sweep after
 * the last attempt's crash) writes for the calls its answer still shows running.
 */
import type { ChatEvent } from '../contract'
import { callsLeftRunning, stateOfStoredEffect, toolCallKey, type StoredEffect, type ToolCallStateEvent } from './tool-call'

export type { StoredEffect } from './tool-call'

/** The `tool.state` events that tell the answer's running calls what their stored effects say. */
export function settledStates(of: string, later: readonly ChatEvent[], effects: readonly StoredEffect[]): ToolCallStateEvent[] {
  const states: ToolCallStateEvent[] = []
  for (const shown of callsLeftRunning(of, later)) {
    const effect = effects.find((e) => e.key === toolCallKey(shown.tool, shown.call))
    const settled = effect && stateOfStoredEffect(effect)
    if (settled) states.push({ of, call: shown.call, tool: shown.tool, input: shown.input, ...settled })
  }
  return states
}
