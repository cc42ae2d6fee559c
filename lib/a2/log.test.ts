import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type Store } from '@/lib/a2/server'
import { createTestDb, layers, type TestDb } from '@/test/db'
import { testContract } from '@/test/contract'
import { isA2Error } from '@/lib/a2'
import { query } from './internal/store'
import { sql } from 'drizzle-orm'

describe.each(layers)('the log on %s', (kind) => {
  let testDb: TestDb
  let store: Store
  let server: ReturnType<typeof createServer<typeof testContract>>

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    store = await testDb.open()
    server = createServer({ contract: testContract, consumers: [], store })
  })
  afterAll(async () => {
    await testDb.drop()
  })

  const countEvents = async (sessionId: string) =>
    (await query<{ n: number }>(store.db, sql`select count(*)::int as n from a2_events where session_id = ${sessionId}`))[0].n

  it('assigns gapless, unique indexes to 8 concurrent appenders × 500 events', async () => {
    const { id } = await server.sessions.create('u1')
    // Postgres: each appender on its own connection, so the row lock really arbitrates.
    const appenders =
      kind === 'postgres'
        ? await Promise.all(Array.from({ length: 8 }, () => testDb.open({ max: 1 })))
        : Array.from({ length: 8 }, () => store)
    const servers = appenders.map((s) => createServer({ contract: testContract, consumers: [], store: s }))
    await Promise.all(
      servers.map(async (s, w) => {
        for (let i = 0; i < 500; i++) await s.append(id, { type: 'message', payload: { text: `w${w} e${i}` } })
      }),
    )
    const rows = await query<{ index: number }>(store.db, sql`select index from a2_events where session_id = ${id} order by index`)
    expect(rows).toHaveLength(4000)
    expect(rows.map((r) => r.index)).toEqual(Array.from({ length: 4000 }, (_, i) => i))
    // Each appender's own events stay in its order.
    const all = await server.read(id, 'u1', { limit: 4000 })
    for (let w = 0; w < 8; w++) {
      const mine = all.filter((e) => (e.payload as { text: string }).text.startsWith(`w${w} `))
      expect(mine.map((e) => (e.payload as { text: string }).text)).toEqual(Array.from({ length: 500 }, (_, i) => `w${w} e${i}`))
    }
  }, 120_000)

  it('never lets a tail see a later append before an earlier one still in its transaction', async () => {
    const { id } = await server.sessions.create('u1')
    await server.append(id, { type: 'message', payload: { text: 'before' } })
    const other = kind === 'postgres' ? createServer({ contract: testContract, consumers: [], store: await testDb.open({ max: 1 }) }) : server

    let release!: () => void
    let entered!: () => void
    const held = new Promise<void>((r) => (release = r))
    const inside = new Promise<void>((r) => (entered = r))
    // Append A holds its transaction (and the session's row lock) open.
    const { append: rawAppend } = await import('./internal/log')
    const a = rawAppend(store, server.routing, id, [{ type: 'message', payload: { text: 'A' } }], {
      within: async () => {
        entered()
        await held
      },
    })
    await inside
    let bDone = false
    const b = other.append(id, { type: 'message', payload: { text: 'B' } }).then((e) => {
      bDone = true
      return e
    })

    const seen: number[] = []
    const controller = new AbortController()
    const reader = (async () => {
      for await (const batch of await server.tail(id, 'u1', { after: 0, signal: controller.signal, pollMs: 20 })) {
        seen.push(...batch.map((e) => e.index))
        if (seen.length >= 2) break
      }
    })()
    if (kind === 'postgres') {
      await new Promise((r) => setTimeout(r, 300))
      expect(bDone).toBe(false) // B waits on A's row lock
      expect(seen).toEqual([]) // and nothing is visible yet
    }
    release()
    const [[eventA], [eventB]] = await Promise.all([a.then((r) => r.events), b])
    await reader
    controller.abort()
    expect(eventA.index).toBe(1)
    expect(eventB.index).toBe(2)
    expect(seen).toEqual([1, 2])
  })

  it('makes a push with a client id idempotent: the repeat answers the original and writes nothing', async () => {
    const { id } = await server.sessions.create('u1')
    const first = await server.push(id, 'u1', { id: 'evt-1', type: 'message', payload: { text: 'hi' } })
    const again = await server.push(id, 'u1', { id: 'evt-1', type: 'message', payload: { text: 'hi' } })
    expect(first.duplicate).toBe(false)
    expect(again.duplicate).toBe(true)
    expect(again.events[0]).toEqual(first.events[0])
    expect(await countEvents(id)).toBe(1)
    // The same id in another session is a different event.
    const other = await server.sessions.create('u1')
    const elsewhere = await server.push(other.id, 'u1', { id: 'evt-1', type: 'message', payload: { text: 'hi' } })
    expect(elsewhere.duplicate).toBe(false)
  })

  it.each([
    ['unknown_type', { type: 'nope', payload: {} }],
    ['invalid_payload', { type: 'message', payload: { text: '' } }],
    ['invalid_payload', { type: 'message', payload: { text: 42 } }],
    ['server_only_type', { type: 'chunk', payload: { of: 'x', delta: 'y' } }],
    ['server_only_type', { type: 'a2.failed', payload: { of: 'x', consumer: 'c', attempts: 1, error: { message: 'm' } } }],
    ['payload_too_large', { type: 'message', payload: { text: 'x'.repeat(3000) } }],
    ['bad_request', { type: 'message', payload: { text: 'a' }, extra: 1 }],
    ['bad_request', { id: 'has space', type: 'message', payload: { text: 'a' } }],
    ['bad_request', 'just a string'],
    ['bad_request', { events: [] }],
    ['unknown_type', { type: '__proto__', payload: {} }],
    ['invalid_payload', { type: 'message', payload: { text: 'nul \u0000 inside' } }],
  ])('refuses %s and writes nothing (%j)', async (code, body) => {
    const { id } = await server.sessions.create('u1')
    const error = await server.push(id, 'u1', body).catch((e) => e)
    expect(isA2Error(error)).toBe(true)
    expect(error.code).toBe(code)
    expect(await countEvents(id)).toBe(0)
  })

  it('refuses a batch as a whole when one event is bad', async () => {
    const { id } = await server.sessions.create('u1')
    const error = await server
      .push(id, 'u1', { events: [{ type: 'message', payload: { text: 'ok' } }, { type: 'chunk', payload: { of: 'a', delta: 'b' } }] })
      .catch((e) => e)
    expect(error.code).toBe('server_only_type')
    expect(await countEvents(id)).toBe(0)
  })

  it("refuses someone else's session and a session that does not exist", async () => {
    const { id } = await server.sessions.create('owner')
    const push = await server.push(id, 'intruder', { type: 'message', payload: { text: 'hi' } }).catch((e) => e)
    expect(push.code).toBe('forbidden')
    const read = await server.read(id, 'intruder').catch((e) => e)
    expect(read.code).toBe('forbidden')
    const tail = await server.tail(id, 'intruder', { after: -1, signal: new AbortController().signal }).catch((e) => e)
    expect(tail.code).toBe('forbidden')
    const missing = await server.push('no-such-session', 'owner', { type: 'message', payload: { text: 'hi' } }).catch((e) => e)
    expect(missing.code).toBe('not_found')
    expect(await countEvents(id)).toBe(0)
  })

  it('refuses a step of a run once that run is cancelled (admission)', async () => {
    const gen = (await import('./internal/consumer')).consumer({
      contract: testContract,
      name: 'generate',
      types: ['generate'],
      abortOn: ['cancelled'],
    }).run(async () => {})
    const s = createServer({ contract: testContract, consumers: [gen], store })
    const { id } = await s.sessions.create('u1')
    const [generate] = (await s.push(id, 'u1', { type: 'generate', payload: {} })).events
    await s.push(id, 'u1', { type: 'note', payload: { of: generate.id } })
    await s.push(id, 'u1', { type: 'cancelled', payload: { of: generate.id, lastSeenIndex: 1 } })
    const refused = await s.push(id, 'u1', { type: 'note', payload: { of: generate.id } }).catch((e) => e)
    expect(refused.code).toBe('run_cancelled')
    expect(await countEvents(id)).toBe(3)
  })

  it('resumes a tail from a cursor with exactly the missing events', async () => {
    const { id } = await server.sessions.create('u1')
    for (let i = 0; i < 10; i++) await server.append(id, { type: 'message', payload: { text: `m${i}` } })
    const controller = new AbortController()
    const got: number[] = []
    for await (const batch of await server.tail(id, 'u1', { after: 6, signal: controller.signal })) {
      got.push(...batch.map((e) => e.index))
      if (got.length >= 3) break
    }
    expect(got).toEqual([7, 8, 9])
    expect(await server.subscriptions()).toBe(0)
  })
})
