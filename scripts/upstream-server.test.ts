import { createOpenAI } from '@ai-sdk/openai'
import { generateText, streamText } from 'ai'
import { afterEach, describe, expect, it } from 'vitest'
import { startUpstream, type Upstream } from './upstream-server'

let upstream: Upstream | undefined

afterEach(async () => {
  await upstream?.close()
  upstream = undefined
})

const modelFor = (up: Upstream) => createOpenAI({ baseURL: up.url, apiKey: 'test' }).chat('test-model')

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

  it('times out waitForRequest when nothing matches', async () => {
    upstream = await startUpstream()
    await expect(upstream.waitForRequest(() => true, 50)).rejects.toThrow(/no matching upstream request/)
  })
})
