/**
 * A session's caps are the size of its log, and they never refuse a Stop of an open run.
 *
 * The server's caps (`createServer({ caps })`) count every event, the consumers' steps (chunks)
 * too: a step batch past `maxEvents` is refused `session_full`, so an answer ends there (its
 * consumer writes its terminal event, which no cap refuses). A push past a cap is refused,
 * except an `abortOn` event (a Stop) that moves an open run: the user's Stop is never refused
 * by a size cap, whichever append carries it (one statement or the transactional append).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { consumer, createServer, type Store } from '@/lib/a2/server'
import { isA2Error } from '@/lib/a2'
import { createTestDb, layers, type TestDb } from './test-kit/db'
import { testContract } from './test-kit/contract'
import { append as rawAppend } from './internal/log/append'
import { query } from './internal/store/store'

const CAPS = { maxEvents: 6, maxPushedBytes: 400 }

describe.each(layers)('session caps on %s', (kind) => {
  let testDb: TestDb
  let store: Store
  let server: ReturnType<typeof createServer<typeof testContract>>

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    store = await testDb.open()
    // No worker: the runs stay ACTIVE (open) until a Stop moves them.
    const generate = consumer({
      contract: testContract,
      name: 'generate',
      types: ['generate'],
      abortOn: { cancelled: (e, t) => e.payload.of === t.id },
    }).run(async () => {})
    server = createServer({ contract: testContract, consumers: [generate], store, caps: CAPS })
  })
  afterAll(async () => {
    await testDb.drop()
  })

  const statusOf = async (sessionId: string, eventId: string) =>
    (await query<{ status: string }>(store.db, sql`select status from a2_jobs where session_id = ${sessionId} and event_id = ${eventId}`))[0]?.status
  const head = async (sessionId: string) =>
    (await query<{ head: number }>(store.db, sql`select head from a2_sessions where id = ${sessionId}`))[0].head
  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => 'admitted',
      (error: unknown) => (isA2Error(error) ? error.code : String(error)),
    )

  /** A session with a message and an open run (`g1`), then its chunks until the cap refuses one. */
  const fullSession = async () => {
    const { id } = await server.sessions.create('u')
    await server.push(
      id,
      'u',
      {
        events: [
          { id: 'm1', type: 'message', payload: { text: 'hi' } },
          { id: 'g1', type: 'generate', payload: {} },
        ],
      },
      { caps: CAPS },
    )
    const chunks: string[] = []
    for (let i = 0; i < 10; i++) {
      chunks.push(await refusal(server.append(id, { type: 'chunk', payload: { of: 'g1', delta: `d${i}` } })))
      if (chunks.at(-1) !== 'admitted') break
    }
    return { id, chunks }
  }

  it('counts the steps: a chunk batch past maxEvents is refused session_full, and the log holds the cap', async () => {
    const { id, chunks } = await fullSession()
    expect(chunks).toEqual(['admitted', 'admitted', 'admitted', 'admitted', 'session_full'])
    expect(await head(id)).toBe(CAPS.maxEvents)
    // The run's terminal event is not a step: its consumer can always end it.
    await server.append(id, { type: 'message', payload: { text: 'the end' } })
    expect(await head(id)).toBe(CAPS.maxEvents + 1)
  })

  it('admits a Stop of an open run past the events cap (one statement), and refuses what is not one', async () => {
    const { id } = await fullSession()
    expect(await refusal(server.push(id, 'u', { id: 'm2', type: 'message', payload: { text: 'more' } }, { caps: CAPS }))).toBe('session_full')
    expect(await refusal(server.push(id, 'u', { id: 'x1', type: 'cancelled', payload: { of: 'm1', lastSeenIndex: 3 } }, { caps: CAPS }))).toBe(
      'session_full',
    ) // it names no run: it moves nothing
    expect(await refusal(server.push(id, 'u', { id: 's1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex: 3 } }, { caps: CAPS }))).toBe(
      'admitted',
    )
    expect(await statusOf(id, 'g1')).toBe('CANCELLING')
    // The same Stop again is answered (its id), and a second Stop of the run now stopping moves nothing.
    expect(await refusal(server.push(id, 'u', { id: 's1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex: 3 } }, { caps: CAPS }))).toBe(
      'admitted',
    )
    expect(await refusal(server.push(id, 'u', { id: 's2', type: 'cancelled', payload: { of: 'g1', lastSeenIndex: 3 } }, { caps: CAPS }))).toBe(
      'session_full',
    )
  })

  it('admits a Stop of an open run past the pushed-bytes cap', async () => {
    const { id } = await server.sessions.create('u')
    await server.push(
      id,
      'u',
      {
        events: [
          { id: 'm1', type: 'message', payload: { text: 'x'.repeat(300) } },
          { id: 'g1', type: 'generate', payload: {} },
        ],
      },
      { caps: CAPS },
    )
    expect(await refusal(server.push(id, 'u', { id: 'm2', type: 'message', payload: { text: 'x'.repeat(100) } }, { caps: CAPS }))).toBe(
      'session_full',
    )
    expect(
      await refusal(
        server.push(
          id,
          'u',
          { id: 's1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex: 999_999_999 } },
          { caps: { ...CAPS, maxPushedBytes: 310 } },
        ),
      ),
    ).toBe('admitted')
    expect(await statusOf(id, 'g1')).toBe('CANCELLING')
  })

  it('admits a Stop of an open run past the cap through the transactional append too', async () => {
    const { id } = await fullSession()
    const stop = { id: 's1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex: 3 } }
    const message = { id: 'm9', type: 'message', payload: { text: 'more' } }
    // `within` sends an append through the transaction (as a stale one-statement push falls back to).
    const within = async () => {}
    expect(await refusal(rawAppend(store, server.routing, id, [message], { owner: 'u', caps: CAPS, within }))).toBe('session_full')
    expect(await refusal(rawAppend(store, server.routing, id, [stop], { owner: 'u', caps: CAPS, within }))).toBe('admitted')
    expect(await statusOf(id, 'g1')).toBe('CANCELLING')
    expect(await head(id)).toBe(CAPS.maxEvents + 1)
  })
})
