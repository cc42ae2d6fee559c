/**
 * An operator's verdict on a tool call left UNKNOWN (the /runs page), told to the chat: the
 * answer showed "may have happened, an operator settles it"; once settled it shows done (with
 * what the operator knows of the result) or that it did not happen. Not a step: the run is
 * stopped or over, and this is what happened outside the log.
 */
import type { A2Server } from '@/lib/a2/server'
import type { Chat } from '../contract'

/** `tool:<tool>:<call>`, the key runToolCall gives a tool call's effect (tool-call.ts). */
const TOOL_EFFECT = /^tool:([^:]+):(.+)$/

export async function recordToolVerdict(
  server: A2Server<Chat>,
  run: { sessionId: string; eventId: string },
  key: string,
  verdict: { done: boolean; result?: unknown },
): Promise<void> {
  const match = TOOL_EFFECT.exec(key)
  if (!match) return // the model call, or another effect: nothing on screen says "may have happened"
  const [, tool, call] = match
  await server.append(run.sessionId, {
    type: 'tool.state',
    payload: { of: run.eventId, call, tool, state: verdict.done ? 'done' : 'cancelled', ...(verdict.done ? { result: verdict.result } : {}) },
  })
}
