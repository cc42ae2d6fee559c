/**
 * Stop, end to end below the browser: a real upstream speaking OpenAI chat-completions
 * SSE, the generate consumer on a worker, the log on PGlite and Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { performance } from 'node:perf_hooks'
import { layers } from '@/test/db'
import { ask, logWhenFinished, useTestStore } from '@/test/chat'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { waitUntil, waitForRun } from '@/lib/a2/testing'
import { buildChatServer } from '../server/chat-server'
import type { ChatEvent } from '../contract'
import { answerRest, answerText, foldChat, reduceChat, type AnswerTurn, type ChatState } from '../fold/reducer'
import { chatFold } from '../fold/checkpoint'

describe.each(layers)('Stop against a real upstream on %s', (kind) => {
  const store = useTestStore(kind)
  let upstream: Upstream
  let chat: ReturnType<typeof buildChatServer>

  beforeAll(async () => {
    upstream = await startUpstream({ tokenMs: 15, tokens: 2000 })
    chat = buildChatServer(store(), { OPENAI_API_KEY: 'test', OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'upstream' })
    await chat.server.startWorker({ pollMs: 100 })
  })
  afterAll(async () => {
    await chat.server.stopWorkers({ graceMs: 1000 })
    await upstream.close()
  })

  it('closes the upstream request, appends nothing after the run, and the refold equals the cut view', async () => {
    const { server } = chat
    const id = await ask(server, 'alice', 'Tell me a long story')
    expect((await server.read(id, 'alice', { limit: 10 })).map((e) => e.index)).toEqual([0, 1])

    // The "browser": tails the log and folds what it receives.
    const controller = new AbortController()
    const seen: ChatEvent[] = []
    const tailing = (async () => {
      for await (const batch of await server.tail(id, 'alice', { after: -1, signal: controller.signal, pollMs: 50 })) seen.push(...batch)
    })()
    await waitUntil(() => seen.filter((e) => e.type === 'chunk').length >= 20, '20 chunks on the tail')
    const request = upstream.requests.at(-1)!
    expect(request.closedAt).toBeUndefined()

    const lastSeenIndex = seen.at(-1)!.index
    const clientView = reduceChat(foldChat(seen.slice()), {
      id: 'stop1',
      sessionId: id,
      index: -1,
      type: 'cancelled',
      payload: { of: 'g1', lastSeenIndex },
      createdAt: new Date().toISOString(),
    })
    const pushedAt = performance.now()
    await server.push(id, 'alice', { id: 'stop1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex } })
    await request.closed
    expect(request.closedEarly).toBe(true)
    // Bounded, not timed: the speed figure lives in `npm run bench`.
    expect(request.closedAt! - pushedAt).toBeLessThan(2_000)

    const run = await waitForRun(store(), { sessionId: id, eventId: 'g1', consumer: 'generate' }, 'CANCELLED')
    expect(run.attempt).toBe(1)
    const settled = await server.read(id, 'alice', { limit: 10_000 })
    // Once the worker has stopped, every attempt it ran has returned: a late write would be in the log by now.
    await server.stopWorkers()
    const later = await server.read(id, 'alice', { limit: 10_000 })
    expect(later.length).toBe(settled.length) // nothing lands after the run returned

    const finished = later.find((e) => e.type === 'finished')!
    expect(finished.payload).toMatchObject({ of: 'g1', reason: 'cancelled' })
    const cancel = later.find((e) => e.type === 'cancelled')!
    // No chunk was admitted after the cancel was durable (the admission boundary).
    expect(later.filter((e) => e.type === 'chunk' && e.index > cancel.index)).toEqual([])

    const refold = foldChat(later as ChatEvent[])
    const answer = (s: typeof refold) => s.turns.find((t) => t.kind === 'assistant') as AnswerTurn
    expect(answer(refold).status).toBe('stopped')
    expect(answerText(answer(refold))).toBe(answerText(answer(clientView)))
    expect(answerText(answer(refold)).length).toBeGreaterThan(0)
    controller.abort()
    await tailing
  })

  it('completes an answer that nobody stops, with finish reason and usage', async () => {
    await chat.server.stopWorkers() // its worker would claim this job too: one upstream per test
    const short = await startUpstream({ tokenMs: 1, tokens: 30 })
    const quick = buildChatServer(store(), { OPENAI_API_KEY: 'test', OPENAI_BASE_URL: short.url })
    const id = await ask(quick.server, 'bob', 'hi')
    await quick.server.startWorker({ pollMs: 50 })
    const events = await logWhenFinished(quick.server, id, 'bob')
    await quick.server.stopWorkers()
    await short.close()
    const finished = events.find((e) => e.type === 'finished')!
    expect(finished.payload).toMatchObject({ reason: 'stop' })
    const answer = foldChat(events).turns[1] as AnswerTurn
    expect(answer.status).toBe('done')
    expect(answer.text).toBe(Array.from({ length: 30 }, (_, i) => `tok${i} `).join(''))
    expect(short.requests[0].body.messages.at(-1)).toMatchObject({ role: 'user', content: 'hi' })
  })
  it('a Stop that lands after its answer finished: the server refold cuts it where the reader’s view did, and keeps the rest aside', async () => {
    await chat.server.stopWorkers() // its worker would claim this job too: one upstream per test
    const short = await startUpstream({ tokenMs: 1, tokens: 30 })
    const quick = buildChatServer(store(), { OPENAI_API_KEY: 'test', OPENAI_BASE_URL: short.url })
    const id = await ask(quick.server, 'carol', 'hi')
    await quick.server.startWorker({ pollMs: 50 })
    // The reader's page was cut off after the answer's first chunks; the worker wrote the rest.
    const log = await logWhenFinished(quick.server, id, 'carol')
    await quick.server.stopWorkers()
    await short.close()
    const chunks = log.filter((e) => e.type === 'chunk')
    expect(chunks.length).toBeGreaterThan(3)
    const lastSeenIndex = chunks[2].index
    const stop = { id: 'late-stop', type: 'cancelled' as const, payload: { of: 'g1', lastSeenIndex } }
    // The page, reconnected, folds the log it caught up on with its pending Stop on top.
    const optimistic = reduceChat(foldChat(log), { ...stop, sessionId: id, index: -1, createdAt: new Date().toISOString() })
    await quick.server.push(id, 'carol', stop)

    const answer = (state: ChatState) => state.turns.find((t) => t.kind === 'assistant') as AnswerTurn
    const { state: refold } = await quick.server.fold(id, 'carol', chatFold)
    const seen = chunks.slice(0, 3).map((e) => (e.payload as { delta: string }).delta)
    expect(answer(refold)).toMatchObject({ status: 'stopped', lastSeenIndex, finishedBeforeStop: true, finishReason: 'stop' })
    expect(answerText(answer(refold))).toBe(seen.join(''))
    expect(answerText(answer(refold)) + answerRest(answer(refold))).toBe(Array.from({ length: 30 }, (_, i) => `tok${i} `).join(''))
    expect(JSON.parse(JSON.stringify(refold))).toEqual(JSON.parse(JSON.stringify(optimistic)))
    // The run had completed: the Stop ends nothing, it only tells the fold what the reader saw.
    expect((await waitForRun(store(), { sessionId: id, eventId: 'g1', consumer: 'generate' }, 'COMPLETED')).status).toBe('COMPLETED')
  })

  it('a Stop that lands after an answer of reasoning and a tool call finished: the refold cuts its parts where the reader’s view did', async () => {
    await chat.server.stopWorkers() // its worker would claim this job too: one upstream per test
    const short = await startUpstream({ tokenMs: 1, tokens: 30 })
    const quick = buildChatServer(store(), { OPENAI_API_KEY: 'test', OPENAI_BASE_URL: short.url })
    const id = await ask(quick.server, 'dan', '[[reasons 5]] what did I note? [[call listNotes {"limit":3}]]')
    await quick.server.startWorker({ pollMs: 50 })
    // The reader's page saw the answer's first reasoning and was cut off; the worker wrote the rest (the call, more reasoning, the text).
    const log = await logWhenFinished(quick.server, id, 'dan')
    await quick.server.stopWorkers()
    await short.close()
    const firstReasoning = log.find((e) => e.type === 'reasoning')!
    const lastSeenIndex = firstReasoning.index
    expect(log.filter((e) => e.type === 'reasoning' && e.index > lastSeenIndex).length).toBeGreaterThan(0)
    expect(log.filter((e) => e.type === 'tool.input').length).toBeGreaterThan(0)
    const stop = { id: 'late-stop', type: 'cancelled' as const, payload: { of: 'g1', lastSeenIndex } }
    // The page's own fold: it cut the answer while it streamed in its view, then caught up on the rest of the log.
    const stoppedInView = reduceChat(foldChat(log.filter((e) => e.index <= lastSeenIndex)), {
      ...stop,
      sessionId: id,
      index: -1,
      createdAt: new Date().toISOString(),
    })
    const view = foldChat(
      log.filter((e) => e.index > lastSeenIndex),
      stoppedInView,
    )
    await quick.server.push(id, 'dan', stop)

    const answer = (state: ChatState) => state.turns.find((t) => t.kind === 'assistant') as AnswerTurn
    const { state: refold } = await quick.server.fold(id, 'dan', chatFold)
    expect(answer(refold)).toMatchObject({ status: 'stopped', lastSeenIndex, finishedBeforeStop: true })
    // Only the reasoning the reader saw; the call ran (its state is known), so it stays, without the input streamed past the cut.
    const parts = answer(refold).parts
    expect(parts.map((p) => p.kind)).toEqual(['reasoning', 'tool'])
    expect(parts[0]).toMatchObject({ kind: 'reasoning', text: (firstReasoning.payload as { delta: string }).delta })
    expect(parts[1]).toMatchObject({ kind: 'tool', tool: 'listNotes', state: 'done', inputText: '' })
    expect(answerText(answer(refold))).toBe('')
    expect(JSON.parse(JSON.stringify(answer(refold).parts))).toEqual(JSON.parse(JSON.stringify(answer(view).parts)))
  })
})
