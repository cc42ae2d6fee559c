/**
 * Regenerate right after Stop: the Stop is recorded (the run CANCELLING) while the worker has
 * yet to unwind it. The new answer is admitted and runs once the worker gets to it; before,
 * admission counted the stopped run as running and refused it ("already running: stop it
 * first"), which a user who had just pressed Stop met as an error (keyboard.spec.ts, under load).
 * The worker is held still with every statement it makes waiting, so the run stays CANCELLING
 * for as long as the test needs, on PGlite and Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { layers } from '@/test/db'
import { ask, useTestStore } from '@/test/chat'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { interceptStore, runOf, waitUntil, waitForRun } from '@/lib/a2/testing'
import type { A2Server } from '@/lib/a2/server'
import type { Chat } from '../contract'
import { buildChatServer } from './chat-server'
import { admitChatPush, referencedIds } from './admission'

/** A push as the events route makes it: admitted by the chat's rules. */
function push(server: A2Server<Chat>, id: string, body: unknown) {
  return server.push(id, 'alice', body, { refersTo: referencedIds, admit: (inputs, found) => admitChatPush(server, 'alice', inputs, found) })
}

describe.each(layers)('Regenerate right after Stop on %s', (kind) => {
  const store = useTestStore(kind)
  let upstream: Upstream
  let chat: ReturnType<typeof buildChatServer>
  let worker: ReturnType<typeof buildChatServer>
  let held: Promise<void> | undefined
  let release = () => {}

  beforeAll(async () => {
    upstream = await startUpstream({ tokenMs: 15, tokens: 60 })
    const model = { OPENAI_API_KEY: 'test', OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'upstream' }
    // Pushes go through `chat`; the worker runs on a store whose statements wait while `held`.
    chat = buildChatServer(store(), model)
    worker = buildChatServer(interceptStore(store(), { before: () => held }), model)
    await worker.server.startWorker({ pollMs: 100 })
  })
  afterAll(async () => {
    release()
    await worker.server.stopWorkers({ graceMs: 1000 })
    await upstream.close()
  })

  it('admits the new answer while the stopped run unwinds, and runs it', async () => {
    const { server } = chat
    const id = await ask(server, 'alice', 'Tell me a story')
    await waitUntil(async () => (await server.read(id, 'alice', { limit: 100 })).some((e) => e.type === 'chunk'), 'a first chunk')

    held = new Promise((resolve) => (release = resolve))
    const seen = await server.read(id, 'alice', { limit: 1000 })
    await push(server, id, { id: 'stop1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex: seen.at(-1)!.index } })
    const stopped = { sessionId: id, eventId: 'g1', consumer: 'generate' }
    expect((await runOf(store(), stopped))?.status).toBe('CANCELLING')

    await push(server, id, { id: 'g2', type: 'generate', payload: { for: 'm1', replaces: 'g1' } })
    expect((await runOf(store(), stopped))?.status).toBe('CANCELLING')

    release()
    held = undefined
    await waitForRun(store(), stopped, 'CANCELLED')
    await waitForRun(store(), { sessionId: id, eventId: 'g2', consumer: 'generate' }, 'COMPLETED')
    const log = await server.read(id, 'alice', { limit: 10_000 })
    const finished = log.filter((e) => e.type === 'finished').map((e) => e.payload as { of: string; reason: string })
    expect(finished).toEqual([expect.objectContaining({ of: 'g1', reason: 'cancelled' }), expect.objectContaining({ of: 'g2', reason: 'stop' })])
  })

  it('still refuses a second answer to a message whose answer runs on', async () => {
    const { server } = chat
    const id = await ask(server, 'alice', 'Tell me a story')
    await expect(push(server, id, { id: 'g2', type: 'generate', payload: { for: 'm1', replaces: 'g1' } })).rejects.toMatchObject({
      code: 'conflict',
    })
  })
})
