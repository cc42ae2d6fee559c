/**
 * A model request that reaches the server after its Stop was acknowledged (seen in a soak: 0.4 s
 * after a cold-start push, the Stop acknowledged first) is a dispatch decided before the Stop, and
 * its record says so: the model effect was dispatched at the run's cancel version before the Stop
 * (0), so the request was let through before the Stop, however late it arrives. The request is then
 * cut at its first refused chunk and the answer ends `cancelled`. The other order, the seed's first
 * race (a Stop between the claim and the dispatch), sends no request at all.
 *
 * Forced here: the worker is held just after (or just before) its dispatch's compare-and-set while
 * the test pushes the Stop, with every NOTIFY to the worker lost, as when the Stop's hint had not
 * reached it. A real upstream speaking OpenAI chat-completions SSE; PGlite and Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { performance } from 'node:perf_hooks'
import { sql } from 'drizzle-orm'
import { layers } from '@/test/db'
import { ask, useTestStore } from '@/test/chat'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { interceptStore, query, waitForRun, waitUntil } from '@/lib/a2/testing'
import { buildChatServer } from '../server/chat-server'

const DISPATCH = "set status = 'DISPATCHED'"

describe.each(layers)('a model request and its Stop, in the order of the dispatch, on %s', (kind) => {
  const store = useTestStore(kind)
  let upstream: Upstream
  let chat: ReturnType<typeof buildChatServer>
  let worker: ReturnType<typeof buildChatServer>
  /** Where the worker is held once: just before or just after its dispatch's statement. */
  let holdAt: 'before' | 'after' | undefined
  let reached = () => {}
  let release = () => {}
  const holdOnce = (at: 'before' | 'after') => async (text: string) => {
    if (holdAt !== at || !text.includes(DISPATCH)) return
    holdAt = undefined
    reached()
    await new Promise<void>((resolve) => (release = resolve))
  }

  beforeAll(async () => {
    upstream = await startUpstream({ tokenMs: 15, tokens: 200 })
    const model = { OPENAI_API_KEY: 'test', OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'upstream' }
    chat = buildChatServer(store(), model)
    const deaf = interceptStore(store(), { before: holdOnce('before'), after: holdOnce('after'), dropNotifications: () => true })
    worker = buildChatServer(deaf, model)
    await worker.server.startWorker({ pollMs: 50 })
  })
  afterAll(async () => {
    release()
    await worker.server.stopWorkers({ graceMs: 1000 })
    await upstream.close()
  })

  async function stopAt(at: 'before' | 'after') {
    const held = new Promise<void>((resolve) => (reached = resolve))
    holdAt = at
    const id = await ask(chat.server, 'alice', `Tell me a story (Stop ${at} the dispatch)`)
    await held
    await chat.server.push(id, 'alice', { id: 'stop1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex: 1 } })
    const acknowledgedAt = performance.now()
    release()
    const run = await waitForRun(store(), { sessionId: id, eventId: 'g1', consumer: 'generate' }, ['CANCELLED', 'COMPLETED'])
    const [effect] = await query<{ status: string; cancel_version: number }>(
      store().db,
      sql`select status, cancel_version from a2_effects where job_id = ${run.id} and key = 'model'`,
    )
    const log = await chat.server.read(id, 'alice', { limit: 10_000 })
    const requests = upstream.requests.filter((r) => JSON.stringify(r.body).includes(`Stop ${at} the dispatch`))
    return { run, effect, log, requests, acknowledgedAt }
  }

  it('dispatched before the Stop: the request may arrive after the Stop, its record says it was let through first, and it is cut', async () => {
    const { run, effect, log, requests, acknowledgedAt } = await stopAt('after')
    expect(requests).toHaveLength(1)
    expect(requests[0].startedAt).toBeGreaterThan(acknowledgedAt) // it reached the server after the Stop was acknowledged…
    expect(effect.cancel_version).toBe(0) // …but was dispatched at the cancel version before the Stop's
    expect(run.cancelVersion).toBe(1)
    expect(run.status).toBe('CANCELLED')
    await requests[0].closed
    expect(requests[0].closedEarly).toBe(true)
    const stop = log.find((e) => e.type === 'cancelled')!
    expect(log.filter((e) => e.type === 'chunk' && e.index > stop.index)).toEqual([])
    expect(log.filter((e) => e.type === 'finished').map((e) => (e.payload as { reason: string }).reason)).toEqual(['cancelled'])
  })

  it('a Stop before the dispatch: no request at all, the effect recorded as cancelled before dispatch', async () => {
    const { run, effect, log, requests } = await stopAt('before')
    expect(effect.status).toBe('CANCELLED_BEFORE_DISPATCH')
    expect(run.status).toBe('CANCELLED')
    // Settled: nothing more will be sent for it.
    await waitUntil(async () => (await chat.server.read(run.sessionId, 'alice', { limit: 100 })).some((e) => e.type === 'finished'), 'finished')
    expect(requests).toEqual([])
    expect(log.filter((e) => e.type === 'chunk')).toEqual([])
  })
})
