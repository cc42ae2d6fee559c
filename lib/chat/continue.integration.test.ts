/**
 * When an attempt dies mid-answer, the next one continues from the committed text: generate
 * sends it to the model as the answer so far, the offline model picks up from that point,
 * and the fold reads one answer — every word the reader saw stays, nothing is said twice.
 */
import { describe, expect, it } from 'vitest'
import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { createServer } from '@/lib/a2/server'
import { layers } from '@/test/db'
import { ask, logWhenFinished, useTestStore } from '@/test/chat'
import { createOfflineModel, offlineAnswer } from '@/lib/ai/offline-model'
import { chat, type ChatEvent } from './contract'
import { generateConsumer } from './generate'
import { noteOutbox } from './notes'
import { foldChat, type AnswerTurn } from './reducer'

const QUESTION = 'How do leases let another worker take over a dead one?'
/** Attempt 1 streams this many tokens, then its connection breaks (the attempt dies mid-answer). */
const TOKENS_BEFORE_DEATH = 12

/** The offline model, except that its first call breaks after TOKENS_BEFORE_DEATH deltas; every call's prompt is kept. */
function dyingOnceModel(): { model: LanguageModelV4; calls: LanguageModelV4CallOptions[] } {
  const inner = createOfflineModel({ msPerToken: 1 })
  const calls: LanguageModelV4CallOptions[] = []
  const model: LanguageModelV4 = {
    ...inner,
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
