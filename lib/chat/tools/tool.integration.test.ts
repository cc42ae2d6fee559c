/**
 * The chat's tool goes through ctx.effect for real: asked to remember something, the
 * (offline) model calls saveNote; the note reaches the outbox exactly once under the
 * effect's idempotency key, the log says so, and the effects are on the record.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { query, waitForRun } from '@/lib/a2/testing'
import { layers } from '@/test/db'
import { ask, logWhenFinished, useTestStore } from '@/test/chat'
import { buildChatServer } from '../server/chat-server'
import { foldChat, type AnswerTurn } from '../fold/reducer'

describe.each(layers)('the saveNote tool on %s', (kind) => {
  const store = useTestStore(kind)
  let chat: ReturnType<typeof buildChatServer>

  beforeAll(async () => {
    chat = buildChatServer(store(), { OFFLINE_MS_PER_TOKEN: 1 })
    await chat.server.startWorker({ pollMs: 50 })
  })
  afterAll(async () => {
    await chat.server.stopWorkers()
  })

  it('saves the note once, through an effect, and tells the user', async () => {
    const { server, notes } = chat
    const id = await ask(server, 'carol', 'Remember that the demo is on Friday.')
    const log = await logWhenFinished(server, id, 'carol')
    const answer = foldChat(log).turns[1] as AnswerTurn
    expect(answer.status).toBe('done')
    expect(answer.notes).toEqual(['the demo is on Friday'])
    expect(answer.text).toContain('I saved a note')

    const saved = await notes.list('carol')
    expect(saved.map((n) => n.body)).toEqual(['the demo is on Friday'])
    // `finished` is appended just before the consumer returns; the run settles right after.
    const run = await waitForRun(store(), { sessionId: id, eventId: 'g1', consumer: 'generate' }, 'COMPLETED')
    const effects = await query<{ key: string; status: string }>(
      store().db,
      sql`select key, status from a2_effects where job_id = ${run.id} order by key`,
    )
    expect(effects.map((e) => e.status)).toEqual(['DONE', 'DONE'])
    expect(effects.map((e) => e.key)).toEqual(['model', expect.stringMatching(/^tool:saveNote:call_/)])
    expect(saved[0].idempotencyKey).toBe(`a2-${run.id}-${effects[1].key}`)
  })
})
