/**
 * An answer's terminal event and its run's status agree in every ordering of the last chunk, the
 * Stop's append and the ending. Seen in a soak with faults: the model got to its end, the answer's
 * `finished { reason: 'stop' }` landed, a Stop landed before the run ended, and the run ended
 * CANCELLED: the log said the model finished, the run's record said it was stopped.
 *
 * Forced here: once `finished` is in the log, the worker's next statement waits until the test
 * has pushed a Stop (the worker's store holds it), so the Stop lands between the answer's end and
 * the run's, if there is such a moment. Then, and with the Stop pushed at every other point
 * (before the end, racing it, after the run ended), the run's status must be what `finished`
 * says: `cancelled` ⇔ CANCELLED. A real upstream speaking OpenAI chat-completions SSE; PGlite and
 * Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { layers } from '@/test/db'
import { ask, useTestStore } from '@/test/chat'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { interceptStore, query, waitForRun, waitUntil } from '@/lib/a2/testing'
import { sql } from 'drizzle-orm'
import type { ChatEvent } from '../contract'
import { buildChatServer } from '../server/chat-server'

type Moment = 'between the end and the run’s end' | 'before the end' | 'racing the end' | 'after the run ended'

describe.each(layers)('finished and the run agree on %s', (kind) => {
  const store = useTestStore(kind)
  let upstream: Upstream
  let chat: ReturnType<typeof buildChatServer>
  let worker: ReturnType<typeof buildChatServer>
  /** The session whose `finished` in the log holds the worker's next statements (once). */
  let watched: string | undefined
  let held: Promise<void> | undefined
  let release = () => {}

  const hasFinished = async (sessionId: string) =>
    (await query<{ n: number }>(store().db, sql`select count(*)::int as n from a2_events where session_id = ${sessionId} and type = 'finished'`))[0]
      .n > 0

  beforeAll(async () => {
    upstream = await startUpstream({ tokenMs: 5, tokens: 30 })
    const model = { OPENAI_API_KEY: 'test', OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'upstream' }
    chat = buildChatServer(store(), model)
    worker = buildChatServer(
      interceptStore(store(), {
        before: () => held,
        // After each statement (before the worker sees its answer): the answer's `finished` in the
        // log holds every statement the worker sends next.
        after: async () => {
          const session = watched
          if (!session || !(await hasFinished(session)) || watched !== session) return
          watched = undefined
          held = new Promise((resolve) => (release = resolve))
        },
      }),
      model,
    )
    await worker.server.startWorker({ pollMs: 50 })
  })
  afterAll(async () => {
    release()
    await worker.server.stopWorkers({ graceMs: 1000 })
    await upstream.close()
  })

  async function scenario(moment: Moment) {
    const { server } = chat
    const id = await ask(server, 'alice', `Tell me a short story (${moment})`)
    const stop = async () => {
      const head = (await server.read(id, 'alice', { limit: 10_000 })).at(-1)!.index
      await server.push(id, 'alice', { id: 'stop1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex: head } })
    }
    const run = { sessionId: id, eventId: 'g1', consumer: 'generate' }
    if (moment === 'between the end and the run’s end') {
      watched = id
      await waitUntil(() => hasFinished(id), 'the answer’s finished')
      await stop()
      watched = undefined
      held = undefined
      release()
    } else if (moment === 'before the end') {
      await waitUntil(async () => (await server.read(id, 'alice', { limit: 100 })).some((e) => e.type === 'chunk'), 'a first chunk')
      await stop()
    } else if (moment === 'racing the end') {
      // The upstream has sent 25 of its 30 tokens: the Stop's append and the answer's end race.
      await waitUntil(() => (upstream.requests.find((r) => JSON.stringify(r.body).includes(moment))?.tokensSent ?? 0) >= 25, '25 tokens sent')
      await stop()
    } else {
      await waitForRun(store(), run, ['COMPLETED', 'CANCELLED'])
      await stop()
    }
    const ended = await waitForRun(store(), run, ['COMPLETED', 'CANCELLED', 'FAILED', 'UNKNOWN'])
    const log = (await server.read(id, 'alice', { limit: 10_000 })) as ChatEvent[]
    const finished = log.filter((e) => e.type === 'finished').map((e) => e.payload as { reason: string })
    expect(finished).toHaveLength(1)
    expect({ moment, status: ended.status, reason: finished[0].reason }).toEqual({
      moment,
      status: finished[0].reason === 'cancelled' ? 'CANCELLED' : 'COMPLETED',
      reason: finished[0].reason,
    })
    return { status: ended.status, reason: finished[0].reason }
  }

  it('a Stop between the answer’s end and its run’s end: the run ends as finished says', async () => {
    const outcome = await scenario('between the end and the run’s end')
    // The model got to its end before the Stop: the answer finished, the Stop is a late one (the fold cuts what the reader missed).
    expect(outcome).toEqual({ status: 'COMPLETED', reason: 'stop' })
  })

  it.each<Moment>(['before the end', 'racing the end', 'after the run ended'])('a Stop %s: the run ends as finished says', async (moment) => {
    await scenario(moment)
  })
})
