/**
 * Deltas that arrive while the answer's previous append is committing go into the next
 * append as one chunk event, not one event each: under load the worker writes, the log
 * stores and every tail sends fewer, larger chunks (bench figure 2). What the reader sees
 * is still whole chunk events, so a Stop's cut (lastSeenIndex) stays exact.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { LanguageModelV4, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { createServer, type A2Server } from '@/lib/a2/server'
import { layers } from '@/test/db'
import { ask, logWhenFinished, useTestStore } from '@/test/chat'
import { chat, MAX_DELTA_CHARS, type Chat } from '../contract'
import { generateConsumer } from './generate'
import { noteOutbox } from '../tools/notes'
import { answerText, foldChat, type AnswerTurn } from '../fold/reducer'

/** A model that has its whole answer at once: every delta after the first arrives while the first append commits. */
function burstModel(deltas: string[]): LanguageModelV4 {
  return {
    specificationVersion: 'v4',
    provider: 'test',
    modelId: 'burst',
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error('stream only')),
    async doStream() {
      const parts: LanguageModelV4StreamPart[] = [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 't' },
        ...deltas.map((delta): LanguageModelV4StreamPart => ({ type: 'text-delta', id: 't', delta })),
        { type: 'text-end', id: 't' },
        {
          type: 'finish',
          finishReason: { unified: 'stop', raw: 'stop' },
          usage: {
            inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
            outputTokens: { total: deltas.length, text: deltas.length, reasoning: undefined },
          },
        },
      ]
      return { stream: new ReadableStream({ start: (c) => (parts.forEach((p) => c.enqueue(p)), c.close()) }) }
    },
  }
}

describe.each(layers)('chunk events on %s', (kind) => {
  const store = useTestStore(kind)
  const servers: Array<A2Server<Chat>> = []
  const serve = async (deltas: string[]) => {
    const server = createServer({
      contract: chat,
      consumers: [generateConsumer({ model: burstModel(deltas), notes: noteOutbox(store()) })],
      store: store(),
    })
    servers.push(server)
    await server.startWorker({ pollMs: 50 })
    return server
  }
  afterAll(async () => {
    for (const server of servers) await server.stopWorkers()
  })

  it('joins the deltas that waited for one append into one chunk event', async () => {
    const deltas = Array.from({ length: 200 }, (_, i) => `w${i} `)
    const server = await serve(deltas)
    const id = await ask(server, 'dana', 'Hello')
    const log = await logWhenFinished(server, id, 'dana')
    const chunks = log.filter((e) => e.type === 'chunk')
    expect(answerText(foldChat(log).turns[1] as AnswerTurn)).toBe(deltas.join(''))
    // The first delta goes alone; the 199 that arrived while it committed need at most a few appends.
    expect(chunks.length).toBeLessThan(10)
    await server.stopWorkers()
  })

  it('never writes a chunk longer than the contract allows', async () => {
    const deltas = Array.from({ length: 30 }, (_, i) => `${i}`.padEnd(1_000, '.'))
    const server = await serve(deltas)
    const id = await ask(server, 'erin', 'Hello')
    const log = await logWhenFinished(server, id, 'erin')
    const chunks = log.filter((e) => e.type === 'chunk')
    expect(chunks.map((e) => e.payload.delta).join('')).toBe(deltas.join(''))
    expect(chunks.every((e) => e.payload.delta.length <= MAX_DELTA_CHARS)).toBe(true)
    expect(log.at(-1)).toMatchObject({ type: 'finished', payload: { reason: 'stop' } })
    await server.stopWorkers()
  })
})
