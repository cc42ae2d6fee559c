/**
 * Abuse and scale at the HTTP surface: a per-user rate limit with a clear 429 and
 * Retry-After; thousands of sessions per user, paged; a session with 100k events opens
 * through a small server-side snapshot.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadRoutes } from '@/test/routes'
import { RateLimiter } from '@/lib/http/rate-limit'
import { isA2Error } from '@/lib/a2'

describe('the rate limiter', () => {
  it('allows a burst, refuses past it with the seconds to wait, and refills', () => {
    const limiter = new RateLimiter(60) // one a second, burst 60
    const t0 = 1_000_000
    for (let i = 0; i < 60; i++) limiter.take('u', 1, t0)
    const refused = (() => {
      try {
        limiter.take('u', 1, t0)
      } catch (error) {
        return error
      }
    })()
    expect(isA2Error(refused, 'rate_limited')).toBe(true)
    expect((refused as { details: { retryAfterS: number } }).details.retryAfterS).toBe(1)
    limiter.take('other', 1, t0) // per user
    expect(() => limiter.take('u', 1, t0 + 1_000)).not.toThrow()
  })
})

describe('limits and scale through the routes (PGlite)', () => {
  let routes: Awaited<ReturnType<typeof loadRoutes>>

  beforeAll(async () => {
    routes = await loadRoutes({ env: { A2_RATE_PUSHES_PER_MIN: '30', A2_RATE_GENERATIONS_PER_MIN: '5' } })
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

  it('opens a session with 100k events (100 answers) through a small snapshot', async () => {
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
    const body = JSON.parse(text) as { frontier: number; state: { turns: Array<{ kind: string; status?: string; text?: string }> } }
    expect(body.frontier).toBe(99_999)
    const answers = body.state.turns.filter((t) => t.kind === 'assistant')
    expect(answers).toHaveLength(100)
    expect(answers.every((a) => a.status === 'done' && a.text === 'x'.repeat(997))).toBe(true)
    // The page downloads ~120 KB of state, not 100k events (~15 MB as SSE).
    expect(text.length).toBeLessThan(200_000)
  }, 180_000)
})
