/**
 * Opening a long chat costs what it shows (issue 28), through the snapshot route on both
 * stores: at 50k events the first screen is under 256 KiB and holds the newest turns, the
 * open answer and the head; the pages above it return every turn of the chat exactly once,
 * in order, and joined they show what the whole fold shows; a bad cursor is a typed 4xx that
 * writes nothing (fuzzed).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { loadRoutes } from '@/test/routes'
import { createTestDb, layers, type TestDb } from '@/test/db'
import { seedLongHistory } from '@/test/long-history'
import { forgetFolds } from '@/lib/a2/testing'
import { chatFold } from '@/lib/chat/fold/checkpoint'
import { joinWindow } from '@/lib/chat/fold/first-screen'
import type { ChatState, Turn } from '@/lib/chat/fold/reducer'
import { visibleTurns } from '@/lib/chat/fold/versions'

/** 2,273 answers of 22 events: 50,006 events. */
const ANSWERS = 2_273
const FIRST_SCREEN_BYTES = 256 * 1024

interface FirstScreenBody {
  state: ChatState
  lastSeenIndex: number
  older: string | null
  continues: string[]
}
interface PageBody {
  turns: Turn[]
  older: string | null
  continues: string[]
}

describe.each(layers)('the first screen of a long chat on %s', (kind) => {
  let testDb: TestDb
  let routes: Awaited<ReturnType<typeof loadRoutes>>
  let owner: Awaited<ReturnType<typeof routes.newUser>>
  let head: number

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    routes = await loadRoutes({ databaseUrl: kind === 'postgres' ? testDb.url : undefined })
    owner = await routes.newUser()
    const { server } = await routes.chatServer.getChatServer()
    ;({ head } = await seedLongHistory(server.store, owner.sessionId, { answers: ANSWERS }))
  }, 120_000)
  afterAll(async () => {
    await routes.chatServer.shutdownChatServer()
    await testDb.drop()
  })

  const get = (query = '') => routes.call('GET', `/api/sessions/${owner.sessionId}/snapshot${query}`, { cookie: owner.cookie })

  it('is bounded in bytes at 50k events and holds the newest 60 turns, the head and a cursor', async () => {
    const response = await get()
    expect(response.status).toBe(200)
    const bytes = (await response.clone().arrayBuffer()).byteLength
    const body = (await response.json()) as FirstScreenBody
    expect(head).toBeGreaterThanOrEqual(50_000)
    expect(bytes).toBeLessThanOrEqual(FIRST_SCREEN_BYTES)
    expect(body.lastSeenIndex).toBe(head - 1)
    expect(body.state.turns).toHaveLength(60)
    expect(body.state.turns.at(-1)).toMatchObject({ kind: 'assistant', id: `e${head - 21}`, status: 'done' })
    expect(body.state.turns[0]).toMatchObject({ kind: 'user', text: `question ${ANSWERS - 30}` })
    expect(body.older).toBe(body.state.turns[0].id)
  }, 120_000)

  it('is the same from a process holding no state of the chat, which reads part of its checkpoint', async () => {
    const warm = await (await get()).json() // the first open folded the log and wrote a checkpoint at its head
    forgetFolds()
    const cold = await get()
    expect(cold.status).toBe(200)
    expect(await cold.json()).toEqual(warm)
    const { server } = await routes.chatServer.getChatServer()
    forgetFolds()
    const part = await server.fold(owner.sessionId, owner.userId, chatFold, { partial: true })
    expect(part.partial).toBe(true)
    expect(part.state.turns.length).toBeLessThanOrEqual(2 * 256) // two blocks of the chat's 4,546 turns
  }, 120_000)

  it('pages above it return every turn exactly once, in order, and joined show what the whole fold shows', async () => {
    const first = (await (await get()).json()) as FirstScreenBody
    let joined = first.state
    let pages = 0
    for (let cursor = first.older; cursor !== null; pages++) {
      const response = await get(`?above=${encodeURIComponent(cursor)}`)
      expect(response.status).toBe(200)
      const page = (await response.json()) as PageBody
      expect(page.turns.length).toBeGreaterThan(0)
      joined = joinWindow(joined, page, 'above')
      cursor = page.older
    }
    expect(pages).toBe(Math.ceil((ANSWERS * 2 - 60) / 60))
    const questions = joined.turns.filter((t) => t.kind === 'user').map((t) => (t as { text: string }).text)
    expect(questions).toEqual(Array.from({ length: ANSWERS }, (_, i) => `question ${i}`))
    const { server } = await routes.chatServer.getChatServer()
    const { state: full } = await server.fold(owner.sessionId, owner.userId, chatFold)
    const shape = (state: ChatState) => visibleTurns(state).map((v) => ({ turn: v.turn, versions: v.versions }))
    expect(shape(joined)).toEqual(JSON.parse(JSON.stringify(shape(full))))
  }, 180_000)

  it('a bad cursor is a typed 4xx and writes nothing', async () => {
    const { server } = await routes.chatServer.getChatServer()
    const written = async () => {
      const result = (await server.store.db.execute(
        sql`select (select count(*) from a2_events)::int as events, (select count(*) from a2_jobs)::int as jobs, (select head from a2_sessions where id = ${owner.sessionId})::int as head`,
      )) as unknown
      return (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows)[0]
    }
    const before = await written()
    const cursor = fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.string({ unit: 'binary', maxLength: 20 }),
      fc.constantFrom('', 'e-1', 'e99999999', '__proto__', 'constructor', '%00', '\uD800', 'x'.repeat(65), 'e1&below=e2'),
    )
    // A lone surrogate has no UTF-8: sent as the bytes a hostile client would send instead.
    const enc = (c: string) => {
      try {
        return encodeURIComponent(c)
      } catch {
        return `%ED%A0%80${c.length}`
      }
    }
    const query = fc.oneof(
      cursor.map((c) => `?above=${enc(c)}`),
      cursor.map((c) => `?below=${enc(c)}`),
      fc.tuple(cursor, cursor).map(([a, b]) => `?above=${enc(a)}&below=${enc(b)}`),
      cursor.map((c) => `?above=e0&above=${enc(c)}`),
    )
    await fc.assert(
      fc.asyncProperty(query, async (q) => {
        const response = await get(q)
        const body = (await response.json()) as { error?: { code: string } }
        if (response.status === 200) return // a cursor that names a real turn (e0, e22, …) is a page
        expect(response.status, q).toBeGreaterThanOrEqual(400)
        expect(response.status, q).toBeLessThan(500)
        expect(['bad_request', 'invalid_text', 'invalid_reference', 'too_deep']).toContain(body.error?.code)
      }),
      { seed: 20261203, numRuns: 120 },
    )
    for (const [q, code] of [
      ['?above=nope', 'invalid_reference'],
      ['?below=e99999999', 'invalid_reference'],
      ['?above=', 'bad_request'],
      [`?above=${'x'.repeat(65)}`, 'bad_request'],
      ['?above=e0&below=e0', 'bad_request'],
    ] as const) {
      const response = await get(q)
      expect([response.status, ((await response.json()) as { error: { code: string } }).error.code], q).toEqual([
        code === 'bad_request' ? 400 : 422,
        code,
      ])
    }
    expect(await written()).toEqual(before)
  }, 180_000)

  it("another user's chat pages nothing: 404", async () => {
    const first = (await (await get()).json()) as FirstScreenBody
    const stranger = await routes.newUser()
    const response = await routes.call('GET', `/api/sessions/${owner.sessionId}/snapshot?above=${first.older}`, { cookie: stranger.cookie })
    expect(response.status).toBe(404)
  })
})
