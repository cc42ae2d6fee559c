/**
 * The HTTP surface, called as Next calls it (Request in, Response out): identity, typed
 * JSON errors with nothing written, idempotent pushes, SSE resume from Last-Event-ID.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { loadRoutes } from '@/test/routes'
import { createTestDb, layers, type TestDb } from '@/test/db'

describe.each(layers)('the API routes on %s', (kind) => {
  let testDb: TestDb
  let routes: Awaited<ReturnType<typeof loadRoutes>>
  let sessions: typeof routes.sessions
  let events: typeof routes.events
  let chatServer: typeof routes.chatServer

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    routes = await loadRoutes({ databaseUrl: kind === 'postgres' ? testDb.url : undefined })
    ;({ sessions, events, chatServer } = routes)
  })
  afterAll(async () => {
    await chatServer.shutdownChatServer()
    await testDb.drop()
  })

  const base = 'http://localhost:3000'
  const params = (id: string) => ({ params: Promise.resolve({ id }) })

  async function newUser() {
    const response = await sessions.GET(new Request(`${base}/api/sessions`))
    const cookie = response.headers.get('set-cookie')!.split(';')[0]
    expect(cookie).toMatch(/^a2_uid=u_/)
    expect(response.headers.get('set-cookie')).toContain('HttpOnly')
    return cookie
  }
  async function newSession(cookie: string) {
    const response = await sessions.POST(
      new Request(`${base}/api/sessions`, { method: 'POST', headers: { cookie, origin: base, 'content-type': 'application/json' }, body: '{}' }),
    )
    expect(response.status).toBe(201)
    return ((await response.json()) as { session: { id: string } }).session.id
  }
  const push = (id: string, cookie: string, body: string, headers: Record<string, string> = {}) =>
    events.POST(
      new Request(`${base}/api/sessions/${id}/events`, {
        method: 'POST',
        headers: { cookie, origin: base, 'content-type': 'application/json', ...headers },
        body,
      }),
      params(id),
    )
  const count = async (id: string, cookie: string) => {
    const { server } = await chatServer.getChatServer()
    const userId = decodeURIComponent(cookie.split('=')[1]).split('.')[0]
    return (await server.read(id, userId)).length
  }

  it('round-trips a push and serves it over SSE, resuming exactly after Last-Event-ID', async () => {
    const cookie = await newUser()
    const id = await newSession(cookie)
    for (let i = 0; i < 5; i++) {
      const response = await push(id, cookie, JSON.stringify({ type: 'message', payload: { text: `m${i}` } }))
      expect(response.status).toBe(201)
      const body = (await response.json()) as { events: Array<{ index: number; id: string }> }
      expect(body.events[0].index).toBe(i)
      expect(body.events[0].id).toBeTruthy()
    }
    const controller = new AbortController()
    const response = await events.GET(
      new Request(`${base}/api/sessions/${id}/events?after=0`, { headers: { cookie, 'last-event-id': '2' }, signal: controller.signal }),
      params(id),
    )
    expect(response.headers.get('content-type')).toContain('text/event-stream')
    const reader = response.body!.getReader()
    let text = ''
    while (!text.includes('id: 4\n')) text += new TextDecoder().decode((await reader.read()).value)
    controller.abort()
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))
    expect(ids).toEqual([3, 4])
    // The client went away: the tail's subscription is released.
    const { server } = await chatServer.getChatServer()
    await vi.waitFor(async () => expect(await server.subscriptions()).toBe(0))
  })

  it('answers each bad input with a typed JSON error and writes nothing', async () => {
    const cookie = await newUser()
    const id = await newSession(cookie)
    const cases: Array<[string, string, number, Record<string, string>?]> = [
      ['{not json', 'invalid_json', 400],
      [JSON.stringify({ type: 'nope', payload: {} }), 'unknown_type', 400],
      [JSON.stringify({ type: 'message', payload: { text: '' } }), 'invalid_payload', 400],
      [JSON.stringify({ type: 'chunk', payload: { of: 'g', attempt: 1, delta: 'x' } }), 'server_only_type', 403],
      [JSON.stringify({ type: 'finished', payload: { of: 'g', attempt: 1, reason: 'stop' } }), 'server_only_type', 403],
      [JSON.stringify({ type: 'message', payload: { text: 'x'.repeat(300_000) } }), 'payload_too_large', 413],
      [JSON.stringify({ type: 'message', payload: { text: 'x'.repeat(20_000) } }), 'invalid_payload', 400],
    ]
    for (const [body, code, status] of cases) {
      const response = await push(id, cookie, body)
      expect([response.status, ((await response.json()) as { error: { code: string } }).error.code]).toEqual([status, code])
    }
    expect(await count(id, cookie)).toBe(0)
  })

  it("refuses someone else's session, a missing one, and a request with no or a forged identity", async () => {
    const alice = await newUser()
    const mallory = await newUser()
    const id = await newSession(alice)
    const body = JSON.stringify({ type: 'message', payload: { text: 'hi' } })
    expect((await push(id, mallory, body)).status).toBe(404)
    const sse = await events.GET(new Request(`${base}/api/sessions/${id}/events`, { headers: { cookie: mallory } }), params(id))
    expect(sse.status).toBe(404)
    expect((await push('00000000-0000-4000-8000-000000000000', alice, body)).status).toBe(404)
    expect((await push('not-a-uuid', alice, body)).status).toBe(400)
    expect((await push(id, '', body)).status).toBe(401)
    const forged = `a2_uid=${encodeURIComponent(alice.split('=')[1].split('.')[0] + '.forgedsignature')}`
    expect((await push(id, forged, body)).status).toBe(401)
    expect(await count(id, alice)).toBe(0)
  })

  it('answers a repeated event id with the original event and writes nothing new', async () => {
    const cookie = await newUser()
    const id = await newSession(cookie)
    const body = JSON.stringify({ id: 'client-1', type: 'message', payload: { text: 'once' } })
    const first = await push(id, cookie, body)
    const second = await push(id, cookie, body)
    expect([first.status, second.status]).toEqual([201, 200])
    const [a, b] = [(await first.json()) as { events: unknown[] }, (await second.json()) as { events: unknown[]; duplicate: boolean }]
    expect(b.events).toEqual(a.events)
    expect(b.duplicate).toBe(true)
    expect(await count(id, cookie)).toBe(1)
  })

  it('lists only my sessions, titled from the first message', async () => {
    const alice = await newUser()
    const bob = await newUser()
    const id = await newSession(alice)
    await newSession(bob)
    await push(id, alice, JSON.stringify({ type: 'message', payload: { text: 'What is a lease?' } }))
    const response = await sessions.GET(new Request(`${base}/api/sessions`, { headers: { cookie: alice } }))
    const { sessions: mine } = (await response.json()) as { sessions: Array<{ id: string; title: string }> }
    expect(mine.map((s) => [s.id, s.title])).toEqual([[id, 'What is a lease?']])
  })
})
