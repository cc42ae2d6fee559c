/**
 * The daily token budget holds whether answers finish or are stopped: a stopped answer
 * costs the prompt it sent and every token the model streamed until the abort, so a user
 * who stops every answer at 80% gets about as many answers a day as one who lets them
 * finish, not an unlimited number. Through the routes, with the embedded worker and the
 * offline model answering for real.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { offlineAnswer } from '@/lib/ai/offline-model'
import type { ChatEvent } from '@/lib/chat/contract'
import { createTestDb, layers, type TestDb } from '@/test/db'
import { loadRoutes } from '@/test/routes'
import { waitUntil } from '@/lib/a2/testing'

const QUESTION = 'How do leases let another worker take over a dead one?'
/** Room for about three finished answers of QUESTION (each ~200 tokens with its prompt). */
const BUDGET = 600

describe.each(layers)('the daily token budget on %s', (kind) => {
  let testDb: TestDb
  let routes: Awaited<ReturnType<typeof loadRoutes>>

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    routes = await loadRoutes({
      databaseUrl: kind === 'postgres' ? testDb.url : undefined,
      env: { A2_EMBEDDED_WORKER: '1', A2_DAILY_TOKENS_PER_USER: String(BUDGET), OFFLINE_MS_PER_TOKEN: '4' },
    })
  })
  afterAll(async () => {
    await routes.chatServer.shutdownChatServer()
    await testDb.drop()
  })

  /** Asks QUESTION in a fresh chat of the user's until the budget refuses, at most `cap` times; `meanwhile` runs on each answer. Returns how many were answered. */
  async function answersUntilRefused(cap: number, meanwhile: (sessionId: string, cookie: string, userId: string, answerId: string) => Promise<void>) {
    const { cookie, userId } = await routes.newUser()
    const { server } = await routes.chatServer.getChatServer()
    for (let n = 0; n < cap; n++) {
      const { id: sessionId } = await server.sessions.create(userId)
      const response = await routes.push(
        sessionId,
        cookie,
        JSON.stringify({
          events: [
            { id: `m${n}`, type: 'message', payload: { text: QUESTION } },
            { id: `g${n}`, type: 'generate', payload: { for: `m${n}` } },
          ],
        }),
      )
      if (response.status === 429) return n
      expect(response.status).toBe(201)
      await meanwhile(sessionId, cookie, userId, `g${n}`)
      await waitUntil(async () => (await log(sessionId, userId)).some((e) => e.type === 'finished'), 'the answer to end', 20_000)
    }
    return cap
  }

  const log = async (sessionId: string, userId: string) => {
    const { server } = await routes.chatServer.getChatServer()
    return (await server.read(sessionId, userId, { limit: 10_000 })) as ChatEvent[]
  }

  it('stopping every answer after 80% of it streamed buys at most 2.5× the answers that finishing them does', async () => {
    const full = offlineAnswer(QUESTION)
    const finishing = await answersUntilRefused(30, async () => {})
    // One past the bound is enough to fail: a loop that gets there was never refused.
    const stopping = await answersUntilRefused(Math.floor(2.5 * finishing) + 1, async (sessionId, cookie, userId, answerId) => {
      const seen = await waitUntil(
        async () => {
          const chunks = (await log(sessionId, userId)).filter((e) => e.type === 'chunk')
          const text = chunks.map((e) => (e.type === 'chunk' ? e.payload.delta : '')).join('')
          return text.length >= 0.8 * full.length ? chunks.at(-1)!.index : undefined
        },
        '80% of the answer to stream',
        20_000,
      )
      const stop = await routes.push(
        sessionId,
        cookie,
        JSON.stringify({ events: [{ type: 'cancelled', payload: { of: answerId, lastSeenIndex: seen } }] }),
      )
      expect(stop.status).toBe(201)
    })
    console.log(`[budget ${kind}] ${BUDGET} tokens a day: ${finishing} answers finished, ${stopping} stopped at 80%`)
    expect(finishing).toBeGreaterThanOrEqual(2)
    expect(stopping).toBeLessThanOrEqual(2.5 * finishing)
  }, 120_000)
})
