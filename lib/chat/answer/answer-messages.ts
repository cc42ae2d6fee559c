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
import type { AssistantModelMessage, ModelMessage, ToolModelMessage } from 'ai'
import { answerText, type AnswerTurn, type ToolPart } from '../fold/reducer'
import { toolPhase } from '../fold/parts'
import { toolResultForModel } from '../tools/tool-call'

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
      content: calls.map((p) => ({ type: 'tool-result' as const, toolCallId: p.call, toolName: p.tool, output: toolResultForModel(p) })),
    }
    messages.push(assistant, tool)
  }
  if (text) messages.push({ role: 'assistant', content: text })
  return messages
}
