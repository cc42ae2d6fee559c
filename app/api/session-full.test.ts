/**
 * A chat that reaches its size cap (A2_MAX_EVENTS_PER_SESSION), through the app's HTTP API on
 * PGlite and Postgres: the answer's own chunks count, the answer ends cleanly with
 * `finished { reason: 'session_full' }` (which the view shows), and a Stop of an answer still
 * open is admitted past the cap, never refused 413.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadRoutes } from '@/test/routes'
import { createTestDb, layers, type TestDb } from '@/test/db'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { waitForRun } from '@/lib/a2/testing'
import { foldChat, type AnswerTurn } from '@/lib/chat/fold/reducer'
import type { ChatEvent } from '@/lib/chat/contract'

const MAX_EVENTS = 12

describe.each(layers)('a full chat through the routes on %s', (kind) => {
  let testDb: TestDb
  let upstream: Upstream
  let routes: Awaited<ReturnType<typeof loadRoutes>>

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    upstream = await startUpstream({ tokenMs: 5, tokens: 500 })
    routes = await loadRoutes({
      databaseUrl: kind === 'postgres' ? testDb.url : undefined,
      env: { A2_MAX_EVENTS_PER_SESSION: String(MAX_EVENTS), OPENAI_API_KEY: 'test', OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'upstream' },
    })
  })
  afterAll(async () => {
    const { server } = await routes.chatServer.getChatServer()
    await server.stopWorkers({ graceMs: 1_000 })
    await routes.chatServer.shutdownChatServer()
    await upstream.close()
    await testDb.drop()
  })

  const ask = async (cookie: string, sessionId: string, text: string) => {
    const response = await routes.push(
      sessionId,
      cookie,
      JSON.stringify({
        events: [
          { id: 'm1', type: 'message', payload: { text } },
          { id: 'g1', type: 'generate', payload: { for: 'm1' } },
        ],
      }),
    )
    expect(response.status).toBe(201)
  }
  const log = async (sessionId: string, userId: string) => {
    const { server } = await routes.chatServer.getChatServer()
    return (await server.read(sessionId, userId, { limit: 10_000 })) as ChatEvent[]
  }

  it('a Stop of an answer still open is admitted when the answer’s chunks have filled the chat', async () => {
    const { cookie, sessionId } = await routes.newUser()
    await ask(cookie, sessionId, 'Tell me a long story')
    // No worker yet: the run stays open while its chunks fill the chat (as a streaming answer's do).
    const { server } = await routes.chatServer.getChatServer()
    for (let i = 2; i < MAX_EVENTS; i++) await server.append(sessionId, { type: 'chunk', payload: { of: 'g1', attempt: 1, delta: `w${i} ` } })
    const another = await routes.push(sessionId, cookie, JSON.stringify({ id: 'm2', type: 'message', payload: { text: 'more' } }))
    expect([another.status, ((await another.json()) as { error: { code: string } }).error.code]).toEqual([413, 'session_full'])

    const stop = await routes.push(
      sessionId,
      cookie,
      JSON.stringify({ id: 's1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex: MAX_EVENTS - 1 } }),
    )
    expect(stop.status).toBe(201)
    await waitForRun(server.store, { sessionId, eventId: 'g1', consumer: 'generate' }, 'CANCELLING')
  })

  it('an answer that reaches the cap ends with reason session_full, and the view says so', async () => {
    const { cookie, userId, sessionId } = await routes.newUser()
    const { server } = await routes.chatServer.getChatServer()
    await server.startWorker({ pollMs: 50 })
    await ask(cookie, sessionId, 'Tell me a long story')
    const run = await waitForRun(server.store, { sessionId, eventId: 'g1', consumer: 'generate' }, ['COMPLETED', 'FAILED', 'CANCELLED', 'UNKNOWN'], {
      timeoutMs: 20_000,
    })
    expect(run.status).toBe('COMPLETED')
    const events = await log(sessionId, userId)
    // The cap counts the chunks; the one terminal event lands past it.
    expect(events.length).toBe(MAX_EVENTS + 1)
    expect(events.filter((e) => e.type === 'finished').map((e) => (e.payload as { reason: string }).reason)).toEqual(['session_full'])
    const answer = foldChat(events).turns.find((t) => t.kind === 'assistant') as AnswerTurn
    expect([answer.status, answer.finishReason]).toEqual(['done', 'session_full'])
  })
})
