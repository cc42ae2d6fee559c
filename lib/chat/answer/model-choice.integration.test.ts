/**
 * Model choice and Continue after Stop, through the real provider path (@ai-sdk/openai's chat
 * model against the test upstream, which records every request), on both stores:
 * - a generate naming a model is answered by that model, and the answer records it (the fold
 *   of the log, so every tab and reload agrees); one naming none by the default;
 * - a regenerate with another model is one more version, the first kept;
 * - Continue sends the cut text (what the fold shows of the stopped answer, not what streamed
 *   past the cut) as the answer so far, and the continuation reads as the cut plus the rest;
 *   a server that starts over has its restatement dropped; a Stop on the continuation cuts it
 *   exactly where its reader was.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { ModelEntry } from '@/lib/ai/model-list'
import type { A2Server } from '@/lib/a2/server'
import { layers } from '@/test/db'
import { useTestStore } from '@/test/chat'
import { waitUntil } from '@/lib/a2/testing'
import { startUpstream, type Upstream, type UpstreamRequest } from '@/scripts/upstream-server'
import { buildChatServer } from '../server/chat-server'
import type { Chat, ChatEvent } from '../contract'
import { CONTINUE_INSTRUCTION } from './history'
import { answerText, foldChat, type AnswerTurn } from '../fold/reducer'
import { visibleTurns } from '../fold/versions'

/** 40 words, `tok0 ` to `tok39 `, 15 ms apart: long enough that a Stop lands mid-answer. */
const TOKENS = 40
const FULL_ANSWER = Array.from({ length: TOKENS }, (_, i) => `tok${i} `).join('')

type Chunk = Extract<ChatEvent, { type: 'chunk' }>

function entries(upstream: Upstream): ModelEntry[] {
  return [
    { id: 'alpha', label: 'Alpha (default)', provider: 'openai', baseURL: upstream.url, model: 'alpha-upstream', reasoning: false, tools: false },
    { id: 'beta', label: 'Beta', provider: 'openai', baseURL: upstream.url, model: 'beta-upstream', reasoning: false, tools: false },
  ]
}

describe.each(layers)('model choice and Continue on %s', (kind) => {
  const store = useTestStore(kind)
  let upstream: Upstream
  let restarting: Upstream
  let built: ReturnType<typeof buildChatServer> | undefined

  beforeAll(async () => {
    upstream = await startUpstream({ tokenMs: 15, tokens: TOKENS })
    // Like OpenAI's own chat completions: no prefill, so a continuation starts the answer over.
    restarting = await startUpstream({ tokenMs: 15, tokens: TOKENS, continuation: 'restart' })
  })
  afterAll(async () => {
    await upstream.close()
    await restarting.close()
  })
  afterEach(async () => {
    await built?.server.stopWorkers()
    built = undefined
  })

  async function serve(on: Upstream): Promise<A2Server<Chat>> {
    built = buildChatServer(store(), { A2_MODELS: entries(on) })
    await built.server.startWorker({ pollMs: 50 })
    return built.server
  }

  const read = (server: A2Server<Chat>, id: string) => server.read(id, 'olga', { limit: 10_000 }) as Promise<ChatEvent[]>
  const chunksOf = (log: ChatEvent[], of: string) => log.filter((e): e is Chunk => e.type === 'chunk' && e.payload.of === of)
  const answerIn = (log: ChatEvent[], id: string) => foldChat(log).turns.find((t) => t.id === id) as AnswerTurn

  async function ended(server: A2Server<Chat>, id: string, of: string): Promise<ChatEvent[]> {
    return waitUntil(async () => {
      const log = await read(server, id)
      return log.some((e) => e.type === 'finished' && e.payload.of === of) ? log : undefined
    }, `${of} to finish`)
  }

  /** Waits for `of`'s third chunk, then stops it as a reader who saw up to its second: the cut leaves chunks streamed past it. */
  async function stopAfterSecondChunk(server: A2Server<Chat>, id: string, of: string): Promise<ChatEvent[]> {
    const seen = await waitUntil(async () => {
      const chunks = chunksOf(await read(server, id), of)
      return chunks.length >= 3 ? chunks : undefined
    }, `${of}'s third chunk`)
    await server.push(id, 'olga', { events: [{ type: 'cancelled', payload: { of, lastSeenIndex: seen[1].index } }] })
    return ended(server, id, of)
  }

  const requestsFor = (on: Upstream, text: string): UpstreamRequest[] => on.requests.filter((r) => JSON.stringify(r.body.messages).includes(text))

  it('each answer is written by the model its generate names and records it; a regenerate with another model is one more version', async () => {
    const server = await serve(upstream)
    const { id } = await server.sessions.create('olga')
    const question = 'Which model answers? (picked beta)'
    await server.push(id, 'olga', {
      events: [
        { id: 'm1', type: 'message', payload: { text: question } },
        { id: 'g1', type: 'generate', payload: { for: 'm1', model: 'beta' } },
      ],
    })
    await ended(server, id, 'g1')
    await server.push(id, 'olga', { events: [{ id: 'g2', type: 'generate', payload: { for: 'm1', replaces: 'g1', model: 'alpha' } }] })
    await ended(server, id, 'g2')
    // Naming none: the default (the list's first).
    await server.push(id, 'olga', { events: [{ id: 'g3', type: 'generate', payload: { for: 'm1', replaces: 'g2' } }] })
    const log = await ended(server, id, 'g3')

    expect(requestsFor(upstream, question).map((r) => r.body.model)).toEqual(['beta-upstream', 'alpha-upstream', 'alpha-upstream'])
    const state = foldChat(log)
    expect(['g1', 'g2', 'g3'].map((g) => (state.turns.find((t) => t.id === g) as AnswerTurn).model)).toEqual(['beta', 'alpha', undefined])
    // Three versions of the one answer, each kept whole and browsable.
    const [, answerSlot] = visibleTurns(state)
    expect(answerSlot.versions).toEqual(['g1', 'g2', 'g3'])
    for (const g of ['g1', 'g2', 'g3']) expect(answerText(answerIn(log, g))).toBe(FULL_ANSWER)
  })

  it('Continue sends the cut text as the answer so far; the continuation shows the cut and then the rest; a Stop on it cuts it exactly', async () => {
    const server = await serve(upstream)
    const { id } = await server.sessions.create('olga')
    const question = 'Tell me a long story (continued)'
    await server.push(id, 'olga', {
      events: [
        { id: 'm1', type: 'message', payload: { text: question } },
        { id: 'g1', type: 'generate', payload: { for: 'm1', model: 'beta' } },
      ],
    })
    const stoppedLog = await stopAfterSecondChunk(server, id, 'g1')
    const stopped = answerIn(stoppedLog, 'g1')
    const chunks = chunksOf(stoppedLog, 'g1')
    const cut = chunks
      .filter((c) => c.index <= stopped.lastSeenIndex!)
      .map((c) => c.payload.delta)
      .join('')
    const streamed = chunks.map((c) => c.payload.delta).join('')
    expect(stopped.status).toBe('stopped')
    expect(answerText(stopped)).toBe(cut)
    // The test means something only if text streamed past the cut: that text must not reach the model.
    expect(streamed.length).toBeGreaterThan(cut.length)

    await server.push(id, 'olga', { events: [{ id: 'g2', type: 'generate', payload: { for: 'm1', continues: 'g1', model: 'alpha' } }] })
    const log = await ended(server, id, 'g2')

    const sent = requestsFor(upstream, question).at(-1)!
    expect(sent.body.model).toBe('alpha-upstream')
    expect(sent.body.messages.at(-1)).toEqual({ role: 'assistant', content: cut })
    expect(sent.body.messages[0].role).toBe('system')
    expect(sent.body.messages[0].content).toContain(CONTINUE_INSTRUCTION)
    expect(JSON.stringify(sent.body.messages)).not.toContain(streamed)

    const continued = answerIn(log, 'g2')
    expect(continued).toMatchObject({ status: 'done', continues: 'g1', prefix: cut, model: 'alpha' })
    // The cut, then what the model said after it: the whole answer, nothing twice.
    expect(answerText(continued)).toBe(FULL_ANSWER)
    expect(answerText(answerIn(log, 'g1'))).toBe(cut)

    // Continue once more, and stop that: what its reader saw of it, after the cut, and no more.
    await server.push(id, 'olga', { events: [{ id: 'g3', type: 'generate', payload: { for: 'm1', continues: 'g1' } }] })
    const again = await stopAfterSecondChunk(server, id, 'g3')
    const g3 = answerIn(again, 'g3')
    const seenOfG3 = chunksOf(again, 'g3')
      .filter((c) => c.index <= g3.lastSeenIndex!)
      .map((c) => c.payload.delta)
      .join('')
    expect(g3.status).toBe('stopped')
    expect(seenOfG3.length).toBeGreaterThan(0)
    expect(answerText(g3)).toBe(cut + seenOfG3)
    expect(answerText(g3).length).toBeLessThan(FULL_ANSWER.length)
    const [, answerSlot] = visibleTurns(foldChat(again))
    expect(answerSlot.versions).toEqual(['g1', 'g2', 'g3'])
  })

  it('a model that starts over instead of continuing: its restatement of the cut is dropped', async () => {
    const server = await serve(restarting)
    const { id } = await server.sessions.create('olga')
    const question = 'Tell me a long story (restarted)'
    await server.push(id, 'olga', {
      events: [
        { id: 'm1', type: 'message', payload: { text: question } },
        { id: 'g1', type: 'generate', payload: { for: 'm1' } },
      ],
    })
    const stoppedLog = await stopAfterSecondChunk(server, id, 'g1')
    const cut = answerText(answerIn(stoppedLog, 'g1'))
    await server.push(id, 'olga', { events: [{ id: 'g2', type: 'generate', payload: { for: 'm1', continues: 'g1' } }] })
    const log = await ended(server, id, 'g2')

    // The server really did start over: the continuation's request streamed the whole answer again.
    const sent = requestsFor(restarting, question).at(-1)!
    expect(sent.body.messages.at(-1)).toEqual({ role: 'assistant', content: cut })
    expect(sent.tokensSent).toBe(TOKENS)
    const continued = answerIn(log, 'g2')
    expect(answerText(continued)).toBe(FULL_ANSWER)
    expect(answerText(continued).split('tok0 ').length - 1).toBe(1)
  })
})
