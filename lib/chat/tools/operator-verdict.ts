/**
 * An operator's verdict on a tool call left UNKNOWN (the /runs page), told to the chat: the
 * answer showed "may have happened, an operator settles it"; once settled it shows done (with
 * what the operator knows of the result) or that it did not happen. Not a step: the run is
 * stopped or over, and this is what happened outside the log.
 */
import type { A2Server } from '@/lib/a2/server'
import type { Chat } from '../contract'
import { parseToolCallKey, stateOfVerdict } from './tool-call'

export async function recordToolVerdict(
  server: A2Server<Chat>,
  run: { sessionId: string; eventId: string },
  key: string,
  verdict: { done: boolean; result?: unknown },
): Promise<void> {
  const named = parseToolCallKey(key)
  if (!named) return // the model call, or another effect: nothing on screen says "may have happened"
  await server.append(run.sessionId, {
    type: 'tool.state',
    payload: { of: run.eventId, call: named.call, tool: named.tool, ...stateOfVerdict(verdict) },
  })
}
