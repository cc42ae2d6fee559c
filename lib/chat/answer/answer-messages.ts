/**
 * An earlier answer as the model is sent it in a later turn: its tool calls (an assistant
 * message of `tool-call` parts), what each did (a `tool` message of `tool-result` parts), then
 * its text, as the reader saw them (the fold's cut applies).
 *
 * - A call the reader never saw complete (a Stop cut it away, or only its input streamed) is not
 *   sent: the model would be told of a call the user was never shown.
 * - A result says what the call's effect record says, never a made-up success: only a call that
 *   is done sends its result; one not started, stopped, failed or of unknown outcome says so.
 * - Reasoning is not sent back: chat-completions servers have no field for it in a request
 *   (OpenAI's ignores it, some OpenAI-compatible ones reject a `reasoning_content` they did not
 *   send), and a model reasons afresh each turn.
 * - The fold keeps an answer's text as one string (compacted at its end), so where text lay
 *   between calls is not kept: the calls go first, since a step's text most often answers them.
 */
import type { AssistantModelMessage, JSONValue, ModelMessage, ToolModelMessage } from 'ai'
import { answerText, type AnswerTurn, type ToolPart } from '../fold/reducer'
import { toolPhase } from '../fold/parts'

type ToolResultOutput = Extract<ToolModelMessage['content'][number], { type: 'tool-result' }>['output']

/** The model messages one earlier answer becomes; none when it showed nothing. */
export function answerMessages(answer: AnswerTurn): ModelMessage[] {
  const text = answerText(answer)
  const calls = answer.parts.filter((p): p is ToolPart => p.kind === 'tool' && toolPhase(p) !== 'input')
  const messages: ModelMessage[] = []
  if (calls.length > 0) {
    const assistant: AssistantModelMessage = {
      role: 'assistant',
      content: calls.map((p) => ({ type: 'tool-call' as const, toolCallId: p.call, toolName: p.tool, input: p.input ?? {} })),
    }
    const tool: ToolModelMessage = {
      role: 'tool',
      content: calls.map((p) => ({ type: 'tool-result' as const, toolCallId: p.call, toolName: p.tool, output: outputOf(p) })),
    }
    messages.push(assistant, tool)
  }
  if (text) messages.push({ role: 'assistant', content: text })
  return messages
}

/** What is known of a call's outcome, from its state (the effect's record). */
function outputOf(part: ToolPart): ToolResultOutput {
  switch (toolPhase(part)) {
    case 'done':
      return { type: 'json', value: (part.result ?? null) as JSONValue }
    case 'failed':
      return { type: 'error-text', value: `The call failed: ${part.error ?? 'no reason was recorded'}.` }
    // 'called': logged, but its answer ended with no state: it never dispatched (a dispatch writes 'running' first), as the page says.
    case 'called':
    case 'not-started':
      return { type: 'text', value: 'Not started: the answer was stopped before this call was made. It did not happen.' }
    case 'cancelled':
      return { type: 'text', value: 'Stopped mid-call, and the receiver has no record of it: it did not happen.' }
    case 'unknown':
      return {
        type: 'text',
        value: `Its outcome is UNKNOWN: it may have happened; the receiver could not say. ${part.settle === 'operator' ? 'An operator will settle it.' : 'It will be settled by asking the receiver again.'}`,
      }
    default:
      // 'running' in an answer that has ended: its attempt died mid-call and no outcome was recorded.
      return { type: 'text', value: 'Its outcome is UNKNOWN: it may have happened; no outcome was recorded.' }
  }
}
