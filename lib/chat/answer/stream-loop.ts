/**
 * The model's stream, part by part, into the answer's steps: text (through the restatement
 * filter), reasoning, a tool call's input as it streams and the complete call, all through one
 * writer in the order the model sent them (steps.ts), so one cut applies to all. Ends at the
 * stream's own `finish` part; a model error or an abort is thrown.
 */
import type { TextStreamPart, ToolSet } from 'ai'
import type { ChunkWriter } from './chunk-writer'
import { modelFailure } from './model-failure'
import type { RestatementFilter } from './restatement'
import type { AnswerStep } from './steps'
import type { ToolCall } from '../tools/tool-call'

/** The stream's own `finish` part: its reason and what the provider reported it cost. */
export interface ModelFinish {
  finishReason: string
  totalUsage: { inputTokens?: number; outputTokens?: number }
}

export interface StreamSink {
  writer: ChunkWriter<AnswerStep>
  /** The text's way to the writer, past the restatement filter. */
  text: RestatementFilter
  /** A complete tool call's step, written once whichever of the stream and the tool's execute comes first. */
  logCall(call: ToolCall): void
  /** Every delta the model generated (text, reasoning, tool input), cut, restated or not: what the answer is billed for. */
  generated(delta: string): void
}

export async function streamLoop(
  stream: AsyncIterable<TextStreamPart<ToolSet>>,
  sink: StreamSink,
  aborted: { signal: AbortSignal; writeFailed: AbortSignal },
): Promise<ModelFinish> {
  const { writer, text } = sink
  const toolNames = new Map<string, string>()
  let finish: ModelFinish | undefined
  for await (const part of stream) {
    if (part.type === 'text-delta') {
      sink.generated(part.text)
      text.add(part.text)
      // The store is away and the backlog is full (chunk-writer.ts): hold the model back.
      await writer.room()
    } else if (part.type === 'reasoning-delta') {
      // Reasoning and tool input are billed like text: the model generated them.
      sink.generated(part.text)
      writer.add({ type: 'reasoning', delta: part.text })
      await writer.room()
    } else if (part.type === 'tool-input-start') toolNames.set(part.id, part.toolName)
    else if (part.type === 'tool-input-delta') {
      sink.generated(part.delta)
      writer.add({ type: 'tool.input', call: part.id, tool: toolNames.get(part.id) ?? 'unknown', delta: part.delta })
      await writer.room()
    } else if (part.type === 'tool-call') sink.logCall({ call: part.toolCallId, tool: part.toolName, input: part.input })
    else if (part.type === 'finish') finish = part
    // A refusal (a 4xx) is thrown as NotRetryable: the same request would get it again.
    else if (part.type === 'error') throw modelFailure(part.error)
    else if (part.type === 'abort') throw aborted.signal.reason ?? aborted.writeFailed.reason ?? new Error('aborted')
  }
  if (!finish) throw new Error('the model stream ended without a finish')
  return finish
}
