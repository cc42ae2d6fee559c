import { createOpenAI } from '@ai-sdk/openai'
import { APICallError } from '@ai-sdk/provider'
import { generateText, isStepCount, streamText, tool } from 'ai'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { REASONING, startUpstream, type Upstream } from './upstream-server'

let upstream: Upstream | undefined

afterEach(async () => {
  await upstream?.close()
  upstream = undefined
})

const modelFor = (up: Upstream) => createOpenAI({ baseURL: up.url, apiKey: 'test' }).chat('test-model')

/** The `delta`s and finish reasons of one streamed completion, as a client that reads the raw SSE sees them. */
async function rawStream(up: Upstream, body: object): Promise<{ deltas: any[]; finishReasons: string[] }> {
  const response = await fetch(`${up.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'test-model', stream: true, ...body }),
  })
  const chunks = (await response.text())
    .split('\n\n')
    .map((frame) => frame.replace(/^data: /, ''))
    .filter((data) => data && data !== '[DONE]')
    .map((data) => JSON.parse(data))
  return {
    deltas: chunks.flatMap((c) => c.choices.map((choice: any) => choice.delta)).filter((d) => Object.keys(d).length > 0),
    finishReasons: chunks.flatMap((c) => c.choices.map((choice: any) => choice.finish_reason)).filter(Boolean),
  }
}

/** What a streamText call failed with: the error part's error (the SDK's own retries off, as the app runs it). */
async function streamError(up: Upstream, options: Partial<Parameters<typeof streamText>[0]> & { prompt: string }): Promise<unknown> {
  const result = streamText({ model: modelFor(up), maxRetries: 0, onError: () => {}, ...options } as Parameters<typeof streamText>[0])
  for await (const part of result.stream) if (part.type === 'error') return part.error
  return undefined
}

const noteTool = tool({ description: 'save a note', inputSchema: z.object({ note: z.string() }), execute: async ({ note }) => ({ saved: note }) })

describe('upstream server', () => {
  it('streams paced tokens and records a completed request', async () => {
    upstream = await startUpstream({ tokens: 5, tokenMs: 5 })
    const result = streamText({ model: modelFor(upstream), prompt: 'hello' })

    expect(await result.text).toBe('tok0 tok1 tok2 tok3 tok4 ')
    expect((await result.usage).outputTokens).toBe(5)

    const request = await upstream.waitForRequest()
    await request.closed
    expect(request.body).toMatchObject({ model: 'test-model', stream: true })
    expect(request.tokensSent).toBe(5)
    expect(request.tokenTimes).toHaveLength(5)
    expect(request.firstTokenAt).toBe(request.tokenTimes[0])
    expect(request.completedAt).toBeDefined()
    expect(request.closedEarly).toBe(false)
    // Token i is due tokenMs * (i + 1) after the stream opens and never goes out early
    // (a late timer is caught up on, so gaps between tokens may be shorter). 1 ms of slack
    // covers timer rounding.
    request.tokenTimes.forEach((t, i) => expect(t - request.startedAt).toBeGreaterThanOrEqual(5 * (i + 1) - 1))
  })

  it('records the connection closing early when the client aborts, and schedules no further token', async () => {
    upstream = await startUpstream({ tokens: 200, tokenMs: 20 })
    const controller = new AbortController()
    const result = streamText({ model: modelFor(upstream), prompt: 'hello', abortSignal: controller.signal })

    let deltas = 0
    const types: string[] = []
    for await (const part of result.stream) {
      types.push(part.type)
      if (part.type === 'text-delta' && ++deltas === 3) {
        controller.abort()
      }
    }
    expect(types.at(-1)).toBe('abort')

    const request = await upstream.waitForRequest()
    await request.closed
    expect(request.closedEarly).toBe(true)
    expect(request.completedAt).toBeUndefined()
    expect(request.tokensSent).toBeLessThan(200)

    // The server stops writing once the client is gone: no next token is scheduled.
    expect(request.writing).toBe(false)
    expect(request.tokenTimes.every((t) => t <= request.closedAt!)).toBe(true)
  })

  it('streams custom text word by word', async () => {
    upstream = await startUpstream({ tokenMs: 1, text: (body) => `You said: ${body.messages.at(-1).content}` })
    const result = streamText({ model: modelFor(upstream), prompt: 'ping pong' })
    expect(await result.text).toBe('You said: ping pong')
    expect(upstream.requests[0].tokensSent).toBe(4)
  })

  it('answers non-streaming requests with a chat.completion', async () => {
    upstream = await startUpstream({ tokens: 3 })
    const { text, finishReason } = await generateText({ model: modelFor(upstream), prompt: 'hello' })
    expect(text).toBe('tok0 tok1 tok2 ')
    expect(finishReason).toBe('stop')
    expect(upstream.requests[0].completedAt).toBeDefined()
  })

  it('serves request records to other processes at /__requests', async () => {
    upstream = await startUpstream({ tokens: 2, tokenMs: 1 })
    await streamText({ model: modelFor(upstream), prompt: 'hello' }).text
    await upstream.requests[0].closed

    const origin = new URL(upstream.url).origin
    const records = await (await fetch(`${origin}/__requests`)).json()
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ id: 1, tokensSent: 2, closedEarly: false, body: { model: 'test-model' } })
    expect(records[0]).not.toHaveProperty('closed')
  })

  it("refuseTools: a request that sends tools gets llama.cpp's 400 (not retryable); one without tools is answered", async () => {
    upstream = await startUpstream({ tokens: 3, tokenMs: 1, refuseTools: true })
    const error = await streamError(upstream, { prompt: 'hello', tools: { saveNote: noteTool } })
    expect(APICallError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ statusCode: 400, isRetryable: false, message: 'tools param requires --jinja flag' })
    expect(upstream.refused).toHaveLength(1)
    expect(upstream.refused[0]).toMatchObject({ status: 400, body: { tools: [expect.objectContaining({ type: 'function' })] } })
    expect(upstream.requests).toHaveLength(0)

    expect(await streamText({ model: modelFor(upstream), prompt: 'hello' }).text).toBe('tok0 tok1 tok2 ')
    expect(upstream.requests[0].body.tools).toBeUndefined()
  })

  it('[[reasons]]: reasoning_content deltas stream before the content', async () => {
    upstream = await startUpstream({ tokens: 3, tokenMs: 1 })
    const { deltas, finishReasons } = await rawStream(upstream, { messages: [{ role: 'user', content: 'why? [[reasons]]' }] })
    const kinds = deltas.filter((d) => d.reasoning_content || d.content).map((d) => (d.reasoning_content ? 'reasoning' : 'content'))
    expect(kinds.join(' ')).toMatch(/^(reasoning )+(content ?)+$/)
    expect(deltas.map((d) => d.reasoning_content ?? '').join('')).toBe(REASONING)
    expect(deltas.map((d) => d.content ?? '').join('')).toBe('tok0 tok1 tok2 ')
    expect(finishReasons).toEqual(['stop'])
    // @ai-sdk/openai's chat model (what the app speaks) does not read reasoning_content: the
    // answer comes through whole and the reasoning is dropped, no error.
    const result = streamText({ model: modelFor(upstream), prompt: 'why? [[reasons]]' })
    expect(await result.text).toBe('tok0 tok1 tok2 ')
    expect(await result.finishReason).toBe('stop')
  })

  it('[[call NAME {args}]]: a tool call streamed in argument fragments (id on the first only), finish_reason tool_calls, then text after the result', async () => {
    upstream = await startUpstream({ tokens: 3, tokenMs: 1 })
    const prompt = 'remember [[call saveNote {"note":"the demo is on Friday"}]]'
    const { deltas, finishReasons } = await rawStream(upstream, { messages: [{ role: 'user', content: prompt }] })
    const calls = deltas.flatMap((d) => d.tool_calls ?? [])
    expect(calls.length).toBeGreaterThan(3)
    expect(calls[0]).toMatchObject({ index: 0, id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'saveNote' } })
    expect(calls.slice(1).every((c) => c.index === 0 && c.id === undefined && c.function.name === undefined)).toBe(true)
    expect(calls.map((c) => c.function.arguments).join('')).toBe('{"note":"the demo is on Friday"}')
    expect(finishReasons).toEqual(['tool_calls'])

    // Through the provider: the fragments join into the tool's input, the tool runs, and the
    // next step (the conversation now holds its result) is answered in text.
    const result = streamText({ model: modelFor(upstream), prompt, tools: { saveNote: noteTool }, stopWhen: isStepCount(2) })
    expect(await result.text).toBe('tok0 tok1 tok2 ')
    const steps = await result.steps
    expect(steps.map((step) => step.finishReason)).toEqual(['tool-calls', 'stop'])
    expect(steps[0].toolCalls.map((call) => call.input)).toEqual([{ note: 'the demo is on Friday' }])
    expect(steps[0].toolResults.map((r) => r.output)).toEqual([{ saved: 'the demo is on Friday' }])
  })

  it('[[fail N STATUS]]: a 400 (context length) and a 401 are not retryable, a 429 and a 503 are; each the first N times, then answered', async () => {
    upstream = await startUpstream({ tokens: 2, tokenMs: 1 })
    const failures = { 400: /maximum context length/, 401: /Incorrect API key/, 429: /Rate limit/, 503: /overloaded/ }
    for (const [status, message] of Object.entries(failures)) {
      const prompt = `status ${status} [[fail 1 ${status}]]`
      const error = await streamError(upstream, { prompt })
      expect(error).toMatchObject({ statusCode: Number(status), isRetryable: Number(status) >= 429, message: expect.stringMatching(message) })
      expect(await streamText({ model: modelFor(upstream), prompt }).text).toBe('tok0 tok1 ')
    }
    expect(upstream.refused.map((r) => r.status)).toEqual([400, 401, 429, 503])
    // `[[fail N]]` alone is a 503.
    expect(await streamError(upstream, { prompt: 'plain [[fail 1]]' })).toMatchObject({ statusCode: 503 })
  })

  it('times out waitForRequest when nothing matches', async () => {
    upstream = await startUpstream()
    await expect(upstream.waitForRequest(() => true, 50)).rejects.toThrow(/no matching upstream request/)
  })
})
