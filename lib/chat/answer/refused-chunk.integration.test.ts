/**
 * A chunk the log refuses (`run_cancelled`: a Stop is recorded and this attempt has not heard of
 * it yet, its NOTIFY lost) stops the model call at once, and the answer ends `cancelled`: before,
 * the model streamed on to its end and `finished { reason: 'stop' }` was appended for a run that
 * ended CANCELLED. A real upstream speaking OpenAI chat-completions SSE; PGlite and Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { layers } from '@/test/db'
import { ask, useTestStore } from '@/test/chat'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { interceptStore, waitUntil, waitForRun } from '@/lib/a2/testing'
import { buildChatServer } from '../server/chat-server'

describe.each(layers)('a refused chunk on %s', (kind) => {
  const store = useTestStore(kind)
  let upstream: Upstream
  let chat: ReturnType<typeof buildChatServer>

  beforeAll(async () => {
    // 80 tokens of 15 ms: the answer would end ~1 s after it starts, well before the 5 s renewal
    // that would otherwise bring the Stop to the attempt.
    upstream = await startUpstream({ tokenMs: 15, tokens: 80 })
    // Every NOTIFY is lost: the attempt can learn of the Stop only from the refusal (or its renewal).
    const deaf = interceptStore(store(), { dropNotifications: () => true })
    chat = buildChatServer(deaf, { OPENAI_API_KEY: 'test', OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'upstream' })
    await chat.server.startWorker({ pollMs: 100 })
  })
  afterAll(async () => {
    await chat.server.stopWorkers({ graceMs: 1000 })
    await upstream.close()
  })

  it('stops the model at once and finishes cancelled, never stop, for a run that ends CANCELLED', async () => {
    const { server } = chat
    const id = await ask(server, 'alice', 'Tell me a story')
    await waitUntil(async () => (await server.read(id, 'alice', { limit: 100 })).filter((e) => e.type === 'chunk').length >= 5, '5 chunks')
    const seen = await server.read(id, 'alice', { limit: 1000 })
    await server.push(id, 'alice', { id: 'stop1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex: seen.at(-1)!.index } })
    const request = upstream.requests.at(-1)!
    await waitForRun(store(), { sessionId: id, eventId: 'g1', consumer: 'generate' }, 'CANCELLED')
    const finished = (await server.read(id, 'alice', { limit: 1000 })).filter((e) => e.type === 'finished')
    expect(finished.map((e) => (e.payload as { reason: string }).reason)).toEqual(['cancelled'])
    await request.closed
    expect(request.closedEarly).toBe(true)
  })
})
