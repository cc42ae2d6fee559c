/**
 * `streamAnswer` does for `generate` what streamText did: text deltas in order, tool calls
 * run once and sent back for the next step (up to maxSteps), the last step's finish reason,
 * usage summed over the steps, a failed stream or a stop surfacing as the caller's error.
 */
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3StreamPart } from '@ai-sdk/provider'
import { streamAnswer, type AnswerOptions } from './model-stream'

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
})
const finish = (reason: 'stop' | 'tool-calls', input = 1, output = 1): LanguageModelV3StreamPart => ({
  type: 'finish',
  finishReason: { unified: reason, raw: reason },
  usage: usage(input, output),
})
const text = (...deltas: string[]): LanguageModelV3StreamPart[] => [
  { type: 'text-start', id: 't' },
  ...deltas.map((delta): LanguageModelV3StreamPart => ({ type: 'text-delta', id: 't', delta })),
  { type: 'text-end', id: 't' },
]
const toolCall = (id: string, input: unknown): LanguageModelV3StreamPart => ({
  type: 'tool-call',
  toolCallId: id,
  toolName: 'saveNote',
  input: typeof input === 'string' ? input : JSON.stringify(input),
})

/** A model answering each call with the next script; it records the calls and whether a stream was cancelled. */
function scripted(steps: Array<LanguageModelV3StreamPart[] | ((call: LanguageModelV3CallOptions) => ReadableStream<LanguageModelV3StreamPart>)>) {
  const calls: LanguageModelV3CallOptions[] = []
  const model: LanguageModelV3 = {
    specificationVersion: 'v3',
    provider: 'test',
    modelId: 'scripted',
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error('stream only')),
    async doStream(call) {
      const step = steps[calls.length]
      calls.push(structuredClone({ ...call, abortSignal: undefined }))
      if (!step) throw new Error('no more steps')
      const stream =
        typeof step === 'function'
          ? step(call)
          : new ReadableStream<LanguageModelV3StreamPart>({ start: (c) => (step.forEach((p) => c.enqueue(p)), c.close()) })
      return { stream }
    },
  }
  return { model, calls }
}

function options(model: LanguageModelV3, extra: Partial<AnswerOptions> = {}) {
  const deltas: string[] = []
  const executed: Array<{ note: string; toolCallId: string }> = []
  const o: AnswerOptions = {
    model,
    system: 'sys',
    messages: [{ role: 'user', content: 'hi' }],
    tools: {
      saveNote: {
        description: 'save',
        input: z.object({ note: z.string().min(1) }),
        execute: async ({ note }, { toolCallId }) => {
          executed.push({ note, toolCallId })
          return { saved: true }
        },
      },
    },
    maxSteps: 3,
    abortSignal: new AbortController().signal,
    onText: (delta) => deltas.push(delta),
    ...extra,
  }
  return { o, deltas, executed }
}

describe('streamAnswer', () => {
  it('streams the text and reports the finish reason and usage', async () => {
    const { model, calls } = scripted([[{ type: 'stream-start', warnings: [] }, ...text('a', 'b', '', 'c'), finish('stop', 5, 3)]])
    const { o, deltas } = options(model, { headers: { 'Idempotency-Key': 'k' } })
    expect(await streamAnswer(o)).toEqual({ finishReason: 'stop', usage: { inputTokens: 5, outputTokens: 3 } })
    expect(deltas).toEqual(['a', 'b', 'c'])
    expect(calls[0].prompt).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
    ])
    expect(calls[0].headers).toEqual({ 'Idempotency-Key': 'k' })
    expect(calls[0].tools).toEqual([
      expect.objectContaining({ type: 'function', name: 'saveNote', description: 'save', inputSchema: expect.objectContaining({ type: 'object' }) }),
    ])
  })

  it('runs a tool call once and sends its result back in the next step; usage is summed', async () => {
    const { model, calls } = scripted([
      [...text('Saving. '), toolCall('c1', { note: 'milk' }), finish('tool-calls', 2, 1)],
      [...text('Done.'), finish('stop', 4, 2)],
    ])
    const { o, deltas, executed } = options(model)
    expect(await streamAnswer(o)).toEqual({ finishReason: 'stop', usage: { inputTokens: 6, outputTokens: 3 } })
    expect(executed).toEqual([{ note: 'milk', toolCallId: 'c1' }])
    expect(deltas.join('')).toBe('Saving. Done.')
    expect(calls[1].prompt.slice(2)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Saving. ' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'saveNote', input: { note: 'milk' } },
        ],
      },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'saveNote', output: { type: 'json', value: { saved: true } } }] },
    ])
  })

  it('stops after maxSteps even if the model keeps calling tools', async () => {
    const again = () => [toolCall(`c${Math.random()}`, { note: 'x' }), finish('tool-calls')]
    const { model, calls } = scripted([again(), again(), again(), again()])
    const { o, executed } = options(model, { maxSteps: 2 })
    expect((await streamAnswer(o)).finishReason).toBe('tool-calls')
    expect(calls).toHaveLength(2)
    expect(executed).toHaveLength(1)
  })

  it('sends a bad tool input or a failed tool back to the model as text', async () => {
    const { model, calls } = scripted([
      [toolCall('c1', { note: '' }), toolCall('c2', '{not json'), finish('tool-calls')],
      [...text('ok'), finish('stop')],
    ])
    const { o, executed } = options(model)
    await streamAnswer(o)
    expect(executed).toEqual([])
    const results = calls[1].prompt.at(-1)!.content as Array<{ output: { type: string } }>
    expect(results.map((r) => r.output.type)).toEqual(['error-text', 'error-text'])
  })

  it('throws the stream error part', async () => {
    const { model } = scripted([[...text('a'), { type: 'error', error: new Error('upstream broke') }]])
    await expect(streamAnswer(options(model).o)).rejects.toThrow('upstream broke')
  })

  it('throws when the stream ends without a finish', async () => {
    const { model } = scripted([text('a')])
    await expect(streamAnswer(options(model).o)).rejects.toThrow('without a finish')
  })

  it('an abort mid-stream throws the signal’s reason and cancels the stream', async () => {
    const controller = new AbortController()
    let cancelled: unknown
    const { model } = scripted([
      (call) =>
        new ReadableStream<LanguageModelV3StreamPart>({
          start(c) {
            c.enqueue({ type: 'text-delta', id: 't', delta: 'first' })
            // As a provider's fetch does: the abort errors the body stream.
            call.abortSignal?.addEventListener('abort', () => c.error(new DOMException('aborted', 'AbortError')))
          },
          cancel(reason) {
            cancelled = reason ?? true
          },
        }),
    ])
    const reason = new Error('the user stopped it')
    const { o, deltas } = options(model, {
      abortSignal: controller.signal,
      onText: (delta) => {
        deltas.push(delta)
        controller.abort(reason)
      },
    })
    await expect(streamAnswer(o)).rejects.toBe(reason)
    expect(deltas).toEqual(['first'])
    expect(cancelled).toBeUndefined() // errored by the abort, nothing left to cancel
  })

  it('leaving on an error part cancels the rest of the stream (the request closes)', async () => {
    let cancelled = false
    const { model } = scripted([
      () =>
        new ReadableStream<LanguageModelV3StreamPart>({
          start(c) {
            c.enqueue({ type: 'error', error: new Error('bad chunk') })
          },
          cancel() {
            cancelled = true
          },
        }),
    ])
    await expect(streamAnswer(options(model).o)).rejects.toThrow('bad chunk')
    expect(cancelled).toBe(true)
  })
})
