/**
 * A long session costs an answer what a short one does: the generate consumer reads the
 * history from a checkpoint of the chat's fold, not by folding every event ever appended.
 *
 * Before: the fold was quadratic (every chunk copied the turn list and the answer's chunk
 * array), a 110k-event session took 68 s to fold, and at ~50k events each attempt blocked
 * its worker past the 15 s lease, lost the claim, and after three attempts the run FAILED.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { createServer, type Store } from '@/lib/a2/server'
import { query, waitUntil } from '@/lib/a2/testing'
import { seedLongHistory } from '@/test/long-history'
import { layers, useTestStore } from '@/test/db'
import { createOfflineModel, offlineAnswer } from '@/lib/ai/offline-model'
import { chat, type ChatEvent } from '../contract'
import { generateConsumer } from './generate'
import { noteOutbox } from '../tools/notes'
import { foldChat, type AnswerTurn } from '../fold/reducer'

/** 2,500 answers of 19 chunks: 55k events, past the size where the old fold lost its lease. */
const ANSWERS = 2_500

describe.each(layers)('a long session on %s', (kind) => {
  const testStore = useTestStore(kind)
  let store: Store
  beforeAll(() => {
    store = testStore()
  })

  it('answers a new message in its first attempt, from the history it had', { timeout: 120_000 }, async () => {
    const model = createOfflineModel({ msPerToken: 1 })
    const prompts: unknown[] = []
    const recording = {
      ...model,
      doStream: (options: Parameters<typeof model.doStream>[0]) => (prompts.push(options.prompt), model.doStream(options)),
    }
    const server = createServer({ contract: chat, consumers: [generateConsumer({ model: recording, notes: noteOutbox(store) })], store })
    const { id } = await server.sessions.create('erin')
    const { head } = await seedLongHistory(store, id, { answers: ANSWERS })
    await server.startWorker({ pollMs: 50 })
    try {
      const lastAnswer = `e${head - 21}`
      await server.push(id, 'erin', {
        events: [
          { id: 'm-new', type: 'message', payload: { text: 'And one more question?', after: lastAnswer } },
          { id: 'g-new', type: 'generate', payload: { for: 'm-new' } },
        ],
      })
      const run = await waitUntil(
        async () => {
          const [row] = await query<{ status: string; attempt: number }>(
            store.db,
            sql`select status, attempt from a2_jobs where session_id = ${id} and event_id = 'g-new'`,
          )
          return row && row.status !== 'ACTIVE' ? row : undefined
        },
        "the new answer's run to end",
        90_000,
      )
      expect(run).toEqual({ status: 'COMPLETED', attempt: 1 })

      // The model saw the long history's tail (trimmed to the context budget) and the new question last.
      const prompt = prompts[0] as Array<{ role: string; content: Array<{ text?: string }> | string }>
      const texts = prompt.map((m) => (typeof m.content === 'string' ? m.content : m.content.map((p) => p.text ?? '').join('')))
      expect(texts.at(-1)).toBe('And one more question?')
      expect(texts.at(-3)).toBe(`question ${ANSWERS - 1}`)
      expect(texts.at(-2)).toBe('word '.repeat(19))

      // The fold of the whole log shows the answer done, with the offline model's full text.
      const tail = (await server.read(id, 'erin', { after: head - 1, limit: 10_000 })) as ChatEvent[]
      const answer = foldChat(tail).turns.find((t) => t.id === 'g-new') as AnswerTurn
      expect(answer.status).toBe('done')
      expect(answer.text).toBe(offlineAnswer('And one more question?'))
    } finally {
      await server.stopWorkers()
    }
  })
})
