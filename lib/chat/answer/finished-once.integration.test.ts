/**
 * Every answer's log has exactly one `finished`, whatever ended it — also one its handler never
 * ran for. A Stop that lands before any worker claims the answer (30–60 ms after Send, with no
 * fault at all) ends its run CANCELLED_BEFORE_START; the fold, the usage shown, the budget and an
 * export all read `finished`, so the consumer's `onEnded` hook writes it (lib/chat/answer/unfinished.ts),
 * with zero usage: the model was never called. And where an attempt had written its own
 * `finished` before the run ended without it, the hook adds none (one id per job).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { layers } from '@/test/db'
import { ask, useTestStore } from '@/test/chat'
import { waitUntil, runOf, waitForRun } from '@/lib/a2/testing'
import { buildChatServer } from '../server/chat-server'
import { finishedId } from './unfinished'

describe.each(layers)('one finished per answer on %s', (kind) => {
  const store = useTestStore(kind)
  let chat: ReturnType<typeof buildChatServer>
  beforeEach(() => {
    chat = buildChatServer(store(), { OFFLINE_MS_PER_TOKEN: 5 } as never)
  })
  afterEach(async () => {
    await chat.server.stopWorkers()
  })

  const finishedOf = async (sessionId: string) => (await chat.server.read(sessionId, 'alice', { limit: 1_000 })).filter((e) => e.type === 'finished')

  it('an answer stopped before any worker started it gets its finished, with zero usage', async () => {
    const { server } = chat
    const id = await ask(server, 'alice', 'Tell me a story')
    // Stopped before a worker is there to claim it: the run is cancelled before its start.
    await server.push(id, 'alice', { id: 'stop1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex: 1 } })
    await server.startWorker({ pollMs: 50 })
    const run = await waitForRun(store(), { sessionId: id, eventId: 'g1', consumer: 'generate' }, 'CANCELLED')
    const finished = await waitUntil(async () => {
      const found = await finishedOf(id)
      return found.length > 0 ? found : undefined
    }, 'the stopped answer’s finished')
    expect(finished).toHaveLength(1)
    expect(finished[0]).toMatchObject({
      id: finishedId(run.id),
      payload: { of: 'g1', reason: 'cancelled', usage: { inputTokens: 0, outputTokens: 0, counted: true } },
    })
  })

  it('never writes a second finished where an attempt wrote its own', async () => {
    const { server } = chat
    const id = await ask(server, 'alice', 'Tell me a story')
    const job = (await runOf(store(), { sessionId: id, eventId: 'g1', consumer: 'generate' }))!
    // What an attempt that died between its `finished` and its run's end leaves in the log.
    await server.append(id, { id: finishedId(job.id), type: 'finished', payload: { of: 'g1', attempt: 1, reason: 'stop' } })
    await server.push(id, 'alice', { id: 'stop1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex: 1 } })
    await server.startWorker({ pollMs: 50 })
    await waitForRun(store(), { sessionId: id, eventId: 'g1', consumer: 'generate' }, 'CANCELLED')
    // The hook ran (its transition is there) and wrote nothing: still the one finished.
    await waitUntil(async () => (await finishedOf(id)).length === 1 || undefined, 'one finished')
    await new Promise((resolve) => setImmediate(resolve))
    expect(await finishedOf(id)).toHaveLength(1)
    expect((await finishedOf(id))[0].payload).toMatchObject({ reason: 'stop' })
  })
})
