/**
 * Abuse and scale at the HTTP surface: a per-user rate limit with a clear 429 and
 * Retry-After; thousands of sessions per user, paged; a session with 100k events opens
 * through a small server-side snapshot.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadRoutes } from '@/test/routes'
import { createTestDb, layers, type TestDb } from '@/test/db'

/** A push that asks for an answer: a new message and a generate for it. */
const ask = (n: number) =>
  JSON.stringify({
    events: [
      { id: `m${n}`, type: 'message', payload: { text: `q${n}` } },
      { type: 'generate', payload: { for: `m${n}` } },
    ],
  })

describe.each(layers)('limits that hold across identities on %s', (kind) => {
  let testDb: TestDb
  let routes: Awaited<ReturnType<typeof loadRoutes>>

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    routes = await loadRoutes({
      databaseUrl: kind === 'postgres' ? testDb.url : undefined,
      env: {
        A2_RATE_IDENTITIES_PER_MIN_PER_ADDRESS: '6',
        A2_RATE_GENERATIONS_PER_MIN_PER_ADDRESS: '4',
        A2_MAX_RUNNING_GENERATIONS_PER_USER: '2',
        A2_MAX_RUNNING_GENERATIONS: '7',
      },
    })
  })
  afterAll(async () => {
    await routes.chatServer.shutdownChatServer()
    await testDb.drop()
  })
  const from = (address: string) => ({ 'x-a2-peer': address })

  it('mints at most the configured identities a minute per address, with Retry-After', async () => {
    const statuses: number[] = []
    let retryAfter: string | null = null
    for (let i = 0; i < 8; i++) {
      const response = await routes.call('GET', '/api/sessions', { headers: from('198.51.100.1') })
      statuses.push(response.status)
      if (response.status === 429) retryAfter = response.headers.get('retry-after')
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429])
    expect(Number(retryAfter)).toBeGreaterThan(0)
    // Another address is not affected; a visitor with an identity is not minting one.
    expect((await routes.call('GET', '/api/sessions', { headers: from('198.51.100.2') })).status).toBe(200)
  })

  it('one address with a fresh identity per request cannot start more than the configured generations a minute', async () => {
    const address = '198.51.100.3'
    const statuses: number[] = []
    for (let i = 0; i < 6; i++) {
      const user = await routes.newUser(from(`198.51.100.${100 + i}`)) // identities minted elsewhere
      statuses.push((await routes.push(user.sessionId, user.cookie, ask(i), from(address))).status)
    }
    expect(statuses).toEqual([201, 201, 201, 201, 429, 429])
    const { server } = await routes.chatServer.getChatServer()
    // The refused pushes wrote nothing: four generations, each with its message, and no more.
    expect(await server.runs.countOpen({ consumer: 'generate' })).toBe(4)
  })

  it('caps the answers one user has running, and all users together, with 429 and Retry-After', async () => {
    const { server } = await routes.chatServer.getChatServer()
    expect(await server.runs.countOpen({ consumer: 'generate' })).toBe(4) // from the test before; none finish (no worker)
    const alice = await routes.newUser(from('198.51.100.20'))
    const statuses: number[] = []
    let refusal: Response | undefined
    for (let i = 0; i < 3; i++) {
      const response = await routes.push(alice.sessionId, alice.cookie, ask(i), from(`198.51.100.${30 + i}`))
      statuses.push(response.status)
      if (response.status === 429) refusal = response
    }
    expect(statuses).toEqual([201, 201, 429]) // her cap is 2
    expect(((await refusal!.json()) as { error: { message: string } }).error.message).toMatch(/you have 2 answers running/)
    expect(Number(refusal!.headers.get('retry-after'))).toBeGreaterThan(0)

    const bob = await routes.newUser(from('198.51.100.21'))
    expect((await routes.push(bob.sessionId, bob.cookie, ask(1), from('198.51.100.40'))).status).toBe(201) // 7 running: the global cap
    const crowded = await routes.push(bob.sessionId, bob.cookie, ask(2), from('198.51.100.41'))
    expect(crowded.status).toBe(429)
    expect(((await crowded.json()) as { error: { message: string } }).error.message).toMatch(/as many questions as it can/)
    expect(await server.runs.countOpen({ consumer: 'generate' })).toBe(7)
  })
})

describe('limits and scale through the routes (PGlite)', () => {
  let routes: Awaited<ReturnType<typeof loadRoutes>>

  beforeAll(async () => {
    routes = await loadRoutes({ env: { A2_RATE_PUSHES_PER_MIN: '30', A2_RATE_GENERATIONS_PER_MIN: '5', A2_DAILY_TOKENS_PER_USER: '1000' } })
  })
  afterAll(async () => {
    await routes.chatServer.shutdownChatServer()
  })
  const user = () => routes.newUser()
  const push = (sessionId: string, cookie: string, body: unknown) => routes.push(sessionId, cookie, JSON.stringify(body))

  it('answers 429 with Retry-After past the generation limit, and writes nothing', async () => {
    const { cookie, userId, sessionId } = await user()
    const statuses: number[] = []
    let retryAfter: string | null = null
    for (let i = 0; i < 7; i++) {
      const response = await push(sessionId, cookie, {
        events: [
          { id: `m${i}`, type: 'message', payload: { text: `q${i}` } },
          { type: 'generate', payload: { for: `m${i}` } },
        ],
      })
      statuses.push(response.status)
      if (response.status === 429) {
        retryAfter = response.headers.get('retry-after')
        expect(((await response.json()) as { error: { code: string } }).error.code).toBe('rate_limited')
      }
    }
    expect(statuses).toEqual([201, 201, 201, 201, 201, 429, 429])
    expect(Number(retryAfter)).toBeGreaterThan(0)
    const { server } = await routes.chatServer.getChatServer()
    expect(await server.read(sessionId, userId, { limit: 100 })).toHaveLength(10)
  })

  it("stops new answers once a user's model tokens of the last 24 hours reach the daily budget", async () => {
    const { cookie, sessionId } = await user()
    const { server } = await routes.chatServer.getChatServer()
    /** An answer that finished with the usage the model reported. */
    const answered = (n: number, inputTokens: number, outputTokens: number) =>
      server.append(
        sessionId,
        { id: `old-m${n}`, type: 'message', payload: { text: `old ${n}` } },
        { id: `old-g${n}`, type: 'generate', payload: { for: `old-m${n}` } },
        { type: 'finished', payload: { of: `old-g${n}`, attempt: 1, reason: 'stop', usage: { inputTokens, outputTokens } } },
      )
    const ask = (n: number) =>
      push(sessionId, cookie, {
        events: [
          { id: `m${n}`, type: 'message', payload: { text: `q${n}` } },
          { type: 'generate', payload: { for: `m${n}` } },
        ],
      })
    await answered(1, 300, 200)
    expect((await ask(1)).status).toBe(201) // 500 of 1,000 used
    await answered(2, 400, 100)
    const refused = await ask(2) // 1,000 of 1,000 used
    expect(refused.status).toBe(429)
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/model tokens \(1000\)/)
    // Until the first counted answer is a day old.
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(86_000)
  })

  it('deleting the chat where the tokens were spent gives no budget back', async () => {
    const { cookie, sessionId, userId } = await user()
    const { server } = await routes.chatServer.getChatServer()
    await server.append(
      sessionId,
      { id: 'spent-m', type: 'message', payload: { text: 'an expensive question' } },
      { id: 'spent-g', type: 'generate', payload: { for: 'spent-m' } },
      { type: 'finished', payload: { of: 'spent-g', attempt: 1, reason: 'stop', usage: { inputTokens: 600, outputTokens: 400 } } },
    )
    const deleted = await routes.call('DELETE', `/api/sessions/${sessionId}`, { cookie, headers: { 'content-type': 'application/json' } })
    expect(deleted.status).toBe(204)
    const fresh = await server.sessions.create(userId)
    const asked = await push(fresh.id, cookie, {
      events: [
        { id: 'after-delete', type: 'message', payload: { text: 'again' } },
        { type: 'generate', payload: { for: 'after-delete' } },
      ],
    })
    expect(asked.status).toBe(429)
    expect(((await asked.json()) as { error: { message: string } }).error.message).toMatch(/model tokens \(1000\)/)
  })

  it('pages through thousands of sessions of one user', async () => {
    const { cookie, userId } = await user()
    const { server } = await routes.chatServer.getChatServer()
    for (let i = 0; i < 2_000; i++) await server.sessions.create(userId, { title: `chat ${i}` })
    const seen = new Set<string>()
    let before: string | undefined
    let pages = 0
    for (;;) {
      const url = `http://localhost/api/sessions${before ? `?before=${encodeURIComponent(before)}` : ''}`
      const response = await routes.sessions.GET(new Request(url, { headers: { cookie } }))
      const page = (await response.json()) as { sessions: Array<{ id: string }>; nextBefore?: string }
      expect(page.sessions.length).toBeLessThanOrEqual(50)
      for (const s of page.sessions) seen.add(s.id)
      pages++
      if (!page.nextBefore) break
      before = page.nextBefore
    }
    // Every session once (the first one, made by user(), included), 50 to a page.
    expect(seen.size).toBe(2_001)
    expect(pages).toBe(41)
  }, 120_000)

  it('opens a session with 100k events (100 answers) through a small first screen', async () => {
    const { cookie, sessionId } = await user()
    const { server } = await routes.chatServer.getChatServer()
    // Setup in one statement (the figure under test is opening the session, not writing it):
    // 100 turns of message, generate, 997 chunks and finished.
    const { sql } = await import('drizzle-orm')
    await server.store.db.execute(sql`
      insert into a2_events (session_id, index, id, type, payload)
      select ${sessionId}, i, 'e' || i,
             case i % 1000 when 0 then 'message' when 1 then 'generate' when 999 then 'finished' else 'chunk' end,
             case i % 1000
               when 0 then jsonb_build_object('text', 'question ' || (i / 1000))
               when 1 then jsonb_build_object('for', 'e' || (i - 1))
               when 999 then jsonb_build_object('of', 'e' || (i - 998), 'attempt', 1, 'reason', 'stop')
               else jsonb_build_object('of', 'e' || (i - i % 1000 + 1), 'attempt', 1, 'delta', 'x')
             end
      from generate_series(0, 99999) as i`)
    await server.store.db.execute(sql`update a2_sessions set head = 100000 where id = ${sessionId}`)

    const response = await routes.snapshot.GET(new Request(`http://localhost/api/sessions/${sessionId}/snapshot`, { headers: { cookie } }), {
      params: Promise.resolve({ id: sessionId }),
    })
    const text = await response.text()
    const body = JSON.parse(text) as {
      lastSeenIndex: number
      older: string | null
      state: { turns: Array<{ kind: string; status?: string; text?: string }> }
    }
    expect(body.lastSeenIndex).toBe(99_999)
    // The first screen: the newest 60 turns (30 answers), and a cursor for the 40 answers above.
    const answers = body.state.turns.filter((t) => t.kind === 'assistant')
    expect(answers).toHaveLength(30)
    expect(answers.every((a) => a.status === 'done' && a.text === 'x'.repeat(997))).toBe(true)
    expect(body.older).toBe('e70000')
    // The page downloads ~36 KB of state, not 100k events (~15 MB as SSE).
    expect(text.length).toBeLessThan(60_000)
  }, 180_000)
})
