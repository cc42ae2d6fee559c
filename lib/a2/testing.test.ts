/**
 * The test kit itself: a run found by consumer and trigger (not "the newest"), waited on until
 * a status, and a model that streams until the run's signal aborts it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { streamText } from 'ai'
import { consumer, createServer, isStop, type Store } from '@/lib/a2/server'
import { hangingModel, listRuns, waitForRun } from '@/lib/a2/testing'
import { createTestDb, type TestDb } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'

describe('the test kit', () => {
  let testDb: TestDb
  let store: Store

  beforeAll(async () => {
    testDb = await createTestDb('pglite')
    store = await testDb.open()
  })
  afterAll(async () => {
    await testDb.drop()
  })

  it('a hanging model streams until the Stop aborts it; waitForRun finds that run, not the newest', async () => {
    const model = hangingModel({ deltas: ['a', 'b'] })
    const streaming = consumer({
      contract: chat,
      name: 'kit-stream',
      types: ['generate'],
      abortOn: { cancelled: (stop, run) => stop.payload.of === run.id },
    }).run(async (ctx) => {
      try {
        const result = streamText({ model, prompt: 'hi', abortSignal: ctx.signal })
        for await (const delta of result.textStream) await ctx.append({ type: 'chunk', payload: { of: ctx.event.id, delta } })
      } catch (error) {
        if (isStop(ctx.signal, error)) return
        throw error
      }
    })
    const server = createServer({ contract: chat, consumers: [streaming], store })
    await server.startWorker({ pollMs: 50 })
    try {
      const { id: sessionId } = await server.sessions.create('kit')
      await server.push(sessionId, 'kit', { id: 'g-mine', type: 'generate', payload: {} })
      const mine = { sessionId, eventId: 'g-mine', consumer: 'kit-stream' }
      // Both deltas are in the log and the model is still streaming: the run stays ACTIVE.
      const chunks = async () => (await server.read(sessionId, 'kit', { limit: 100 })).filter((e) => e.type === 'chunk').length
      await expect.poll(chunks).toBe(2)
      expect((await waitForRun(store, mine, 'ACTIVE')).attempt).toBe(1)

      // A newer run of the same consumer: "the newest run" is no longer mine.
      await server.push(sessionId, 'kit', { id: 'g-other', type: 'generate', payload: {} })
      const [newest] = await listRuns(store, { consumer: 'kit-stream', sessionId })
      expect(newest.eventId).toBe('g-other')

      await server.push(sessionId, 'kit', { type: 'cancelled', payload: { of: 'g-mine', lastSeenIndex: 0 } })
      const stopped = await waitForRun(store, mine, ['CANCELLED', 'FAILED'])
      expect(stopped.status).toBe('CANCELLED')
      expect(model.doStreamCalls.length).toBeGreaterThanOrEqual(1)
      expect((await waitForRun(store, { ...mine, eventId: 'g-other' }, (run) => run.status === 'ACTIVE')).status).toBe('ACTIVE')
      await expect(waitForRun(store, mine, 'COMPLETED', { timeoutMs: 50 })).rejects.toThrow(/last state .*CANCELLED/)
    } finally {
      await server.stopWorkers({ graceMs: 1_000 })
    }
  })
})
