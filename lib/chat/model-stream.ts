/**
 * A model's answer, streamed step by step with its tools, read straight from the provider's
 * `doStream`. `streamText` puts about ten web streams between the provider and the reader
 * (its step and tool stitching, output parsing, callbacks, a tee per consumer); at figure 2's
 * load each token crossing them cost the worker ~130 µs of CPU more than reading the
 * provider's stream (bench/diagnostics/model-stream-cpu.ts, 100 streams: fullStream 257 and
 * textStream 245 µs a token, doStream 122). What `generate` used of it is here: text deltas
 * in order, tool calls executed and sent back for up to `maxSteps` steps, the last step's
 * finish reason, the usage of all steps, and the abort signal closing the request.
 */
import type {
  JSONValue,
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3ToolCall,
  LanguageModelV3ToolResultOutput,
  LanguageModelV3Usage,
} from '@ai-sdk/provider'
import { asSchema } from 'ai'
import type { z } from 'zod'

/** A tool the model may call: its input is checked against `input` before `execute` runs. */
export interface AnswerTool<S extends z.ZodType = z.ZodType> {
  description: string
  input: S
  execute(input: z.infer<S>, call: { toolCallId: string }): Promise<JSONValue>
}

export interface AnswerOptions {
  model: LanguageModelV3
  system: string
  messages: ReadonlyArray<{ role: 'user' | 'assistant'; content: string }>
  tools: Record<string, AnswerTool>
  /** Model calls at most: a step that ends in tool calls is followed by another with their results. */
  maxSteps: number
  abortSignal: AbortSignal
  headers?: Record<string, string>
  onText(delta: string): void
}

export interface AnswerOutcome {
  /** The last step's reason ('stop', 'length', 'tool-calls', …). */
  finishReason: string
  /** Summed over the steps. */
  usage: { inputTokens?: number; outputTokens?: number }
}

export async function streamAnswer(options: AnswerOptions): Promise<AnswerOutcome> {
  const { model, tools, abortSignal } = options
  const prompt: LanguageModelV3Message[] = [
    { role: 'system', content: options.system },
    ...options.messages.map((m): LanguageModelV3Message => ({ role: m.role, content: [{ type: 'text', text: m.content }] })),
  ]
  const toolList: LanguageModelV3FunctionTool[] = Object.entries(tools).map(([name, t]) => ({
    type: 'function',
    name,
    description: t.description,
    inputSchema: jsonSchemaOf(t.input),
  }))
  const usage: AnswerOutcome['usage'] = {}
  for (let step = 1; ; step++) {
    const call: LanguageModelV3CallOptions = {
      prompt,
      abortSignal,
      headers: options.headers,
      ...(toolList.length > 0 ? { tools: toolList, toolChoice: { type: 'auto' } } : {}),
    }
    const { text, calls, finish } = await readStep(model, call, options.onText, abortSignal)
    addUsage(usage, finish.usage)
    const finishReason = finish.finishReason.unified
    if (finishReason !== 'tool-calls' || calls.length === 0 || step >= options.maxSteps) return { finishReason, usage }
    const results = await Promise.all(calls.map((c) => runTool(tools, c)))
    if (abortSignal.aborted) throw abortSignal.reason
    prompt.push(
      {
        role: 'assistant',
        content: [
          ...(text ? [{ type: 'text' as const, text }] : []),
          ...calls.map((c) => ({ type: 'tool-call' as const, toolCallId: c.toolCallId, toolName: c.toolName, input: parseInput(c.input) })),
        ],
      },
      {
        role: 'tool',
        content: calls.map((c, i) => ({ type: 'tool-result' as const, toolCallId: c.toolCallId, toolName: c.toolName, output: results[i] })),
      },
    )
  }
}

type Finish = { usage: LanguageModelV3Usage; finishReason: { unified: string } }

/** One model call, read to its end: the text deltas go to `onText` as they come. */
async function readStep(
  model: LanguageModelV3,
  call: LanguageModelV3CallOptions,
  onText: (delta: string) => void,
  signal: AbortSignal,
): Promise<{ text: string; calls: LanguageModelV3ToolCall[]; finish: Finish }> {
  const { stream } = await Promise.resolve(model.doStream(call)).catch((error: unknown) => {
    throw signal.aborted ? signal.reason : error
  })
  const reader = stream.getReader()
  let text = ''
  const calls: LanguageModelV3ToolCall[] = []
  let finish: Finish | undefined
  let done = false
  try {
    for (;;) {
      const next = await reader.read()
      if (next.done) break
      const part = next.value
      if (part.type === 'text-delta') {
        if (part.delta) {
          text += part.delta
          onText(part.delta)
        }
      } else if (part.type === 'tool-call') {
        if (!part.providerExecuted) calls.push(part)
      } else if (part.type === 'finish') finish = part
      else if (part.type === 'error') throw part.error
    }
    done = true
  } catch (error) {
    // An aborted request fails the read with the fetch's AbortError: the caller gets the
    // signal's own reason (a Stop, a failed write), as streamText's `abort` part gave it.
    if (signal.aborted) throw signal.reason
    throw error
  } finally {
    // Leaving early (an error part, a throw) closes the request: nothing reads the rest.
    if (!done) void reader.cancel().catch(() => {})
  }
  if (signal.aborted) throw signal.reason
  if (!finish) throw new Error('the model stream ended without a finish')
  return { text, calls, finish }
}

/** A tool's result for the model; a bad input or a failed tool goes back to it as text, as streamText sends it. */
async function runTool(tools: Record<string, AnswerTool>, call: LanguageModelV3ToolCall): Promise<LanguageModelV3ToolResultOutput> {
  const t = Object.hasOwn(tools, call.toolName) ? tools[call.toolName] : undefined
  if (!t) return { type: 'error-text', value: `no such tool: ${call.toolName}` }
  const parsed = t.input.safeParse(parseInput(call.input))
  if (!parsed.success) return { type: 'error-text', value: `invalid input for ${call.toolName}: ${parsed.error.message}` }
  try {
    return { type: 'json', value: await t.execute(parsed.data, { toolCallId: call.toolCallId }) }
  } catch (error) {
    return { type: 'error-text', value: error instanceof Error ? error.message : String(error) }
  }
}

/** The JSON schema the provider sends for a tool's input, as streamText derives it (built once per schema). */
const jsonSchemas = new WeakMap<z.ZodType, LanguageModelV3FunctionTool['inputSchema']>()
function jsonSchemaOf(schema: z.ZodType): LanguageModelV3FunctionTool['inputSchema'] {
  let json = jsonSchemas.get(schema)
  if (!json) jsonSchemas.set(schema, (json = asSchema(schema).jsonSchema as LanguageModelV3FunctionTool['inputSchema']))
  return json
}

/** A tool call's input is JSON text; an empty one is no arguments. */
function parseInput(input: string): unknown {
  if (!input.trim()) return {}
  try {
    return JSON.parse(input)
  } catch {
    return input
  }
}

function addUsage(sum: AnswerOutcome['usage'], step: LanguageModelV3Usage): void {
  if (step.inputTokens.total !== undefined) sum.inputTokens = (sum.inputTokens ?? 0) + step.inputTokens.total
  if (step.outputTokens.total !== undefined) sum.outputTokens = (sum.outputTokens ?? 0) + step.outputTokens.total
}
