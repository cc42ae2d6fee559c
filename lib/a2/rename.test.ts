/**
 * A rename is an event in the log (`a2.renamed`), committed with the session row's new title:
 * in index order with the rest, never one without the other, and a consumer may abortOn it.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { consumer, createServer, type Store } from '@/lib/a2/server'
import { RENAMED_TYPE, isA2Error } from '@/lib/a2'
import { query, waitForRun } from '@/lib/a2/testing'
import { layers, useTestStore } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'
import { aborted, gate } from './test-kit/runtime'

describe.each(layers)('renaming a session on %s', (kind) => {
  const testStore = useTestStore(kind)
  let store: Store
  beforeAll(() => {
    store = testStore()
  })

  const titleOf = async (id: string) =>
    (await query<{ title: string | null }>(store.db, sql`select title from a2_sessions where id = ${id}`))[0].title

  it('appends a2.renamed after the events before it, with the row’s new title', async () => {
    const server = createServer({ contract: chat, consumers: [], store })
    const { id } = await server.sessions.create('ana', { title: 'old' })
    await server.push(id, 'ana', { id: 'm1', type: 'message', payload: { text: 'hi' } })
    const renamed = await server.sessions.rename(id, 'ana', 'new title')
    await server.push(id, 'ana', { id: 'm2', type: 'message', payload: { text: 'again' } })

    const log = await server.read(id, 'ana', { limit: 100 })
    expect(log.map((e) => [e.index, e.type])).toEqual([
      [0, 'message'],
      [1, RENAMED_TYPE],
      [2, 'message'],
    ])
    expect(log[1]).toMatchObject({ id: renamed!.id, payload: { title: 'new title' } })
    expect(await titleOf(id)).toBe('new title')
  })

  it('a title derived from the log ({ event: false }) sets the row only', async () => {
    const server = createServer({ contract: chat, consumers: [], store })
    const { id } = await server.sessions.create('dee')
    await server.push(id, 'dee', { id: 'm1', type: 'message', payload: { text: 'first words' } })
    expect(await server.sessions.rename(id, 'dee', 'first words', { event: false })).toBeUndefined()
    expect(await titleOf(id)).toBe('first words')
    expect((await server.read(id, 'dee', { limit: 100 })).map((e) => e.type)).toEqual(['message'])
  })

  it('a refused rename writes neither the title nor the event: not the owner, or the event cannot be stored', async () => {
    const server = createServer({ contract: chat, consumers: [], store })
    const { id } = await server.sessions.create('ben', { title: 'kept' })

    const foreign = await server.sessions.rename(id, 'mallory', 'stolen').catch((e: unknown) => e)
    expect(isA2Error(foreign, 'not_found')).toBe(true)

    // The title's update runs first; then the event's insert fails: the whole rename rolls back.
    await store.db.execute(sql`create function a2_test_refuse_rename() returns trigger language plpgsql as $$
      begin raise exception 'refused for the test'; end $$`)
    await store.db.execute(sql`create trigger a2_test_refuse_rename before insert on a2_events
      for each row when (new.type = 'a2.renamed') execute function a2_test_refuse_rename()`)
    try {
      const failed = await server.sessions.rename(id, 'ben', 'half done').catch((e: unknown) => e)
      expect(String((failed as Error).cause ?? failed)).toMatch(/refused for the test/)
    } finally {
      await store.db.execute(sql`drop trigger a2_test_refuse_rename on a2_events`)
      await store.db.execute(sql`drop function a2_test_refuse_rename()`)
    }

    expect(await titleOf(id)).toBe('kept')
    expect(await server.read(id, 'ben', { limit: 100 })).toEqual([])
    const [head] = await query<{ head: number }>(store.db, sql`select head from a2_sessions where id = ${id}`)
    expect(head.head).toBe(0) // the reserved index rolled back too: the log stays gapless
  })

  it('aborts a run whose consumer has abortOn the rename', async () => {
    const started = gate()
    let reason: unknown
    const titled = consumer({ contract: chat, name: 'titled', types: ['generate'], abortOn: [RENAMED_TYPE] }).run(async (ctx) => {
      started.open()
      reason = await aborted(ctx.signal)
    })
    const server = createServer({ contract: chat, consumers: [titled], store })
    await server.startWorker({ pollMs: 50 })
    try {
      const { id } = await server.sessions.create('cy')
      await server.push(id, 'cy', { id: 'g1', type: 'generate', payload: {} })
      await started.promise
      const renamed = await server.sessions.rename(id, 'cy', 'a new name')
      const run = await waitForRun(store, { sessionId: id, eventId: 'g1', consumer: 'titled' }, 'CANCELLED')
      expect(run.cancelVersion).toBe(1)
      expect(JSON.stringify(run.cancelledBy)).toContain(renamed!.id) // the rename is what cancelled it
      expect(reason).toMatchObject({ code: 'CANCELLED' })
    } finally {
      await server.stopWorkers({ graceMs: 1_000 })
    }
  })
})
