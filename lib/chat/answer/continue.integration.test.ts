/**
 * When an attempt dies mid-answer, the next one continues from the committed text: generate
 * sends it to the model as the answer so far, the offline model picks up from that point,
 * and the fold reads one answer — every word the reader saw stays, nothing is said twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOpenAI } from '@ai-sdk/openai'
import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { createServer } from '@/lib/a2/server'
import { layers } from '@/test/db'
import { ask, logWhenFinished, useTestStore } from '@/test/chat'
import { createOfflineModel, offlineAnswer } from '@/lib/ai/offline-model'
import { chat, type ChatEvent } from '../contract'
import { generateConsumer } from './generate'
import { noteOutbox } from '../tools/notes'
import { foldChat, type AnswerTurn } from '../fold/reducer'

const QUESTION = 'How do leases let another worker take over a dead one?'
/** Attempt 1 streams this many tokens, then its connection breaks (the attempt dies mid-answer). */
const TOKENS_BEFORE_DEATH = 12

/** `inner`, except that its first call breaks after TOKENS_BEFORE_DEATH deltas; every call's prompt is kept. */
function dyingOnceModel(inner: LanguageModelV4 = createOfflineModel({ msPerToken: 1 })): {
  model: LanguageModelV4
  calls: LanguageModelV4CallOptions[]
} {
  const calls: LanguageModelV4CallOptions[] = []
  const model: LanguageModelV4 = {
    // Fields by name: a provider's model is a class whose `provider` is a getter, which a spread would drop.
    specificationVersion: inner.specificationVersion,
    provider: inner.provider,
    modelId: inner.modelId,
    supportedUrls: inner.supportedUrls,
    doGenerate: (options) => inner.doGenerate(options),
    async doStream(options) {
      calls.push(options)
      const result = await inner.doStream(options)
      if (calls.length > 1) return result
      let deltas = 0
      const breaking = result.stream.pipeThrough(
        new TransformStream<LanguageModelV4StreamPart, LanguageModelV4StreamPart>({
          transform(part, controller) {
            if (part.type === 'text-delta' && ++deltas > TOKENS_BEFORE_DEATH) {
              controller.error(new Error('ECONNRESET: the attempt died mid-answer'))
              return
            }
            controller.enqueue(part)
          },
        }),
      )
      return { ...result, stream: breaking }
    },
  }
  return { model, calls }
}

describe.each(layers)('a successor attempt continues the answer on %s', (kind) => {
  const store = useTestStore(kind)

  it('sends the committed text as the answer so far; the view reads as one answer', async () => {
    const { model, calls } = dyingOnceModel()
    const server = createServer({ contract: chat, consumers: [generateConsumer({ model, notes: noteOutbox(store()) })], store: store() })
    await server.startWorker({ pollMs: 50 })
    try {
      const id = await ask(server, 'dana', QUESTION)
      const log = await logWhenFinished(server, id, 'dana')

      const chunks = log.filter((e): e is Extract<ChatEvent, { type: 'chunk' }> => e.type === 'chunk')
      const committedByFirst = chunks
        .filter((c) => c.payload.attempt === 1)
        .map((c) => c.payload.delta)
        .join('')
      expect(committedByFirst.length).toBeGreaterThan(0)
      expect(chunks.some((c) => c.payload.attempt === 2)).toBe(true)

      // Attempt 2 was told the answer so far: the committed text, as the assistant's last message.
      expect(calls).toHaveLength(2)
      const last = calls[1].prompt.at(-1)!
      expect(last.role).toBe('assistant')
      expect(last.content).toEqual([expect.objectContaining({ type: 'text', text: committedByFirst })])

      // One answer: the full offline answer exactly once, with attempt 1's words first.
      const answer = foldChat(log).turns[1] as AnswerTurn
      expect(answer.status).toBe('done')
      expect(answer.text).toBe(offlineAnswer(QUESTION))
      expect(answer.text.startsWith(committedByFirst)).toBe(true)
    } finally {
      await server.stopWorkers()
    }
  })
})

/** The answer the test upstream streams: 60 words, `tok0 ` to `tok59 `. */
const UPSTREAM_TOKENS = 60
const upstreamAnswer = Array.from({ length: UPSTREAM_TOKENS }, (_, i) => `tok${i} `).join('')

describe.each(layers)('a successor attempt against a chat-completions server that starts over, on %s', (kind) => {
  const store = useTestStore(kind)
  let upstream: Upstream
  beforeAll(async () => {
    // Like OpenAI's own chat completions: no prefill, so "continue" is only an instruction, and this model ignores it.
    upstream = await startUpstream({ tokenMs: 1, tokens: UPSTREAM_TOKENS, continuation: 'restart' })
  })
  afterAll(() => upstream.close())

  it('the reader sees one answer: what the model restated is dropped, what it said after is kept', async () => {
    const provider = createOpenAI({ apiKey: 'test', baseURL: upstream.url })
    const { model, calls } = dyingOnceModel(provider.chat('restarts') as LanguageModelV4)
    const server = createServer({ contract: chat, consumers: [generateConsumer({ model, notes: noteOutbox(store()) })], store: store() })
    await server.startWorker({ pollMs: 50 })
    try {
      const id = await ask(server, 'erin', QUESTION)
      const log = await logWhenFinished(server, id, 'erin')
      expect(calls).toHaveLength(2)
      // The server really did start over: attempt 2's request streamed the whole answer again.
      expect(upstream.requests.at(-1)!.tokensSent).toBe(UPSTREAM_TOKENS)

      const chunks = log.filter((e): e is Extract<ChatEvent, { type: 'chunk' }> => e.type === 'chunk')
      const byFirst = chunks.filter((c) => c.payload.attempt === 1).map((c) => c.payload.delta)
      expect(byFirst.join('')).toBe(upstreamAnswer.slice(0, byFirst.join('').length))
      expect(byFirst.join('').length).toBeGreaterThan(0)
      const answer = foldChat(log).turns[1] as AnswerTurn
      expect(answer.status).toBe('done')
      expect(answer.text).toBe(upstreamAnswer)
      expect(answer.text.split('tok0 ').length - 1).toBe(1)
    } finally {
      await server.stopWorkers()
    }
  })
})
