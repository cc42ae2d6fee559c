/**
 * Issue 14's findings 2, 3, 4 and 7, one test each, through the route handlers on PGlite
 * and Postgres: every hostile request answers a typed 4xx, never a 5xx, and writes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { loadRoutes } from '@/test/routes'
import { createTestDb, layers, type TestDb } from '@/test/db'

const LIMITS = {
  A2_MAX_SESSIONS_PER_USER: '3',
  A2_MAX_EVENTS_PER_SESSION: '6',
  A2_MAX_PUSHED_BYTES_PER_SESSION: String(40 * 1024),
  A2_MAX_TAILS_PER_USER: '2',
  A2_BODY_TIMEOUT_MS: '300',
}

describe.each(layers)('hostile input through the routes on %s', (kind) => {
  let testDb: TestDb
  let routes: Awaited<ReturnType<typeof loadRoutes>>

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    routes = await loadRoutes({ databaseUrl: kind === 'postgres' ? testDb.url : undefined, env: LIMITS })
  })
  afterAll(async () => {
    await routes.chatServer.shutdownChatServer()
    await testDb.drop()
  })

  /** Every row the app holds, table by table: a refused request must change none of them. */
  async function rows(): Promise<Record<string, number>> {
    const { server } = await routes.chatServer.getChatServer()
    const result = (await server.store.db.execute(
      sql`select 'sessions' as t, count(*)::int as n from a2_sessions
          union all select 'events', count(*)::int from a2_events
          union all select 'jobs', count(*)::int from a2_jobs
          union all select 'bytes', coalesce(sum(pushed_bytes), 0)::int from a2_sessions
          union all select 'titles', count(*)::int from a2_sessions where title <> ''`,
    )) as unknown
    // postgres-js answers an array, PGlite `{ rows }`.
    const counts = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Array<{ t: string; n: number }>
    return Object.fromEntries(counts.map((r) => [r.t, r.n]))
  }

  /** Sends each request and expects its status and error code, with no row written. */
  async function refused(cases: Array<[string, () => Promise<Response>, number, string]>) {
    for (const [name, send, status, code] of cases) {
      const before = await rows()
      const response = await send()
      const body = (await response.json().catch(() => ({}))) as { error?: { code: string } }
      expect([name, response.status, body.error?.code]).toEqual([name, status, code])
      expect(await rows(), `${name} wrote`).toEqual(before)
    }
  }

  const message = (text: string, id?: string) => ({ ...(id ? { id } : {}), type: 'message', payload: { text } })

  it('finding 3: strings Postgres cannot store, repeated ids, deep nesting and bad cursors are 400s', async () => {
    const { cookie, sessionId } = await routes.newUser()
    const push = (body: unknown) => () => routes.push(sessionId, cookie, typeof body === 'string' ? body : JSON.stringify(body))
    let deep = '"x"'
    for (let i = 0; i < 5_000; i++) deep = `[${deep}]`
    await refused([
      ['lone surrogate in a message', push(message('a\ud800b')), 400, 'invalid_text'],
      ['lone low surrogate in a key', push({ type: 'message', payload: { text: 'hi', ['\udc00']: 1 } }), 400, 'invalid_text'],
      ['NUL in a message', push(message('a\u0000b')), 400, 'invalid_text'],
      ['NUL in a title', () => routes.call('POST', '/api/sessions', { cookie, body: JSON.stringify({ title: 'a\u0000b' }) }), 400, 'invalid_text'],
      [
        'lone surrogate in a title',
        () => routes.call('POST', '/api/sessions', { cookie, body: JSON.stringify({ title: 'a\ud800' }) }),
        400,
        'invalid_text',
      ],
      [
        'NUL in a rename',
        () => routes.call('PATCH', `/api/sessions/${sessionId}`, { cookie, body: JSON.stringify({ title: '\u0000' }) }),
        400,
        'invalid_text',
      ],
      ['the same id twice in one push', push({ events: [message('a', 'dup'), message('b', 'dup')] }), 400, 'bad_request'],
      ['5,000 levels of nesting', push(`{"type":"message","payload":{"text":"x","deep":${deep}}}`), 400, 'too_deep'],
      ['5,000 levels as the body', push(deep), 400, 'too_deep'],
      ['an over-long page cursor', () => routes.call('GET', '/api/sessions?before=99999999999999999999.x', { cookie }), 400, 'bad_request'],
      ['after = 2**31', () => routes.call('GET', `/api/sessions/${sessionId}/events?after=2147483648`, { cookie }), 400, 'bad_request'],
      ['after = 0x10', () => routes.call('GET', `/api/sessions/${sessionId}/events?after=0x10`, { cookie }), 400, 'bad_request'],
      ['after = " 1"', () => routes.call('GET', `/api/sessions/${sessionId}/events?after=%201`, { cookie }), 400, 'bad_request'],
      ['after = 1e400', () => routes.call('GET', `/api/sessions/${sessionId}/events?after=1e400`, { cookie }), 400, 'bad_request'],
      ['after = -2', () => routes.call('GET', `/api/sessions/${sessionId}/events?after=-2`, { cookie }), 400, 'bad_request'],
      ['run id 2**31', () => routes.call('GET', '/api/runs/2147483648', { cookie }), 400, 'bad_request'],
      ['run id 0x10', () => routes.call('GET', '/api/runs/0x10', { cookie }), 400, 'bad_request'],
    ])
  })

  it('finding 3: an empty cursor is no cursor, and 2**31-1 is a valid one', async () => {
    const { cookie, sessionId } = await routes.newUser()
    expect((await routes.push(sessionId, cookie, JSON.stringify(message('first')))).status).toBe(201)
    const { server } = await routes.chatServer.getChatServer()
    const idsIn = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))
    /** Opens the session's event stream; reads it as it arrives; `close` aborts it and returns the ids it carried. */
    const openStream = async (url: string, headers: Record<string, string> = {}) => {
      const controller = new AbortController()
      const response = await routes.call('GET', url, { cookie, headers, signal: controller.signal })
      expect(response.status).toBe(200)
      const reader = response.body!.getReader()
      const decoder = new TextDecoder()
      let text = ''
      let reading: Promise<ReadableStreamReadResult<Uint8Array>> | undefined
      const readOne = async () => {
        const next = await (reading ??= reader.read())
        reading = undefined
        if (!next.done) text += decoder.decode(next.value)
        return next.done
      }
      return {
        /** Reads until `pattern` shows; fails (never waits on) after 5 s, naming what it saw. */
        async readUntil(pattern: RegExp) {
          let timer: ReturnType<typeof setTimeout> | undefined
          const deadline = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`${url}: no ${pattern} in ${JSON.stringify(text)}`)), 5_000)
          })
          try {
            while (!pattern.test(text)) if (await Promise.race([readOne(), deadline])) throw new Error(`${url} ended before ${pattern}`)
          } finally {
            clearTimeout(timer)
          }
        },
        /** Aborts the stream and reads what it had sent to its end. */
        async close() {
          controller.abort()
          while (!(await readOne()));
          return idsIn(text)
        },
      }
    }

    // No cursor (an empty `after=`, an empty Last-Event-ID): read from the start.
    for (const [url, headers] of [
      [`/api/sessions/${sessionId}/events?after=`, {}],
      [`/api/sessions/${sessionId}/events`, { 'last-event-id': '' }],
    ] as const) {
      const stream = await openStream(url, headers)
      await stream.readUntil(/^id: \d+$/m)
      expect(await stream.close(), url).toEqual([0])
    }

    // 2**31-1: a valid cursor past every event, so nothing shows. "Nothing" is what a witness
    // saw: a stream from the start, open with it when the next event is pushed, receives that
    // event from the same notification. A stream that ignored the cursor would have sent event
    // 0 from its first read, and event 1 from that notification.
    const witness = await openStream(`/api/sessions/${sessionId}/events?after=`)
    await witness.readUntil(/^id: 0$/m)
    const subscribed = await server.subscriptions()
    const far = await openStream(`/api/sessions/${sessionId}/events?after=2147483647`)
    await expect.poll(() => server.subscriptions()).toBe(subscribed + 1)
    expect((await routes.push(sessionId, cookie, JSON.stringify(message('second')))).status).toBe(201)
    await witness.readUntil(/^id: 1$/m)
    expect(await witness.close()).toEqual([0, 1])
    expect(await far.close()).toEqual([])
  })

  it('finding 3: a malformed or foreign cookie is no identity, never a 500', async () => {
    const { sessionId } = await routes.newUser()
    for (const cookie of ['a2_uid=%E0%A4%A', 'a2_uid=%', 'a2_uid=u_x.%ZZ; other=%']) {
      const listed = await routes.call('GET', '/api/sessions', { cookie })
      expect(listed.status, cookie).toBe(200)
      expect(listed.headers.get('set-cookie'), cookie).toMatch(/^a2_uid=u_/) // a new identity, not theirs
      const pushed = await routes.push(sessionId, cookie, JSON.stringify(message('x')))
      expect(pushed.status, cookie).toBe(401)
    }
  })

  it('finding 7: a reused id with another payload is a 409; references must name the right event', async () => {
    const { cookie, sessionId } = await routes.newUser()
    expect((await routes.push(sessionId, cookie, JSON.stringify(message('original', 'm1')))).status).toBe(201)
    const push = (body: unknown) => () => routes.push(sessionId, cookie, JSON.stringify(body))
    await refused([
      ['same id, other text', push(message('changed', 'm1')), 409, 'conflict'],
      ['same id, other type', push({ id: 'm1', type: 'generate', payload: { for: 'm1' } }), 409, 'conflict'],
      ['generate for nothing', push({ type: 'generate', payload: { for: 'nope' } }), 422, 'invalid_reference'],
      ['cancelled of nothing', push({ type: 'cancelled', payload: { of: 'nope', lastSeenIndex: 0 } }), 422, 'invalid_reference'],
      ['cancelled of a message', push({ type: 'cancelled', payload: { of: 'm1', lastSeenIndex: 0 } }), 422, 'invalid_reference'],
      ['edits of nothing', push({ type: 'message', payload: { text: 'x', edits: 'nope' } }), 422, 'invalid_reference'],
      ['replaces a user message', push({ type: 'generate', payload: { for: 'm1', replaces: 'm1' } }), 422, 'invalid_reference'],
    ])
    // The same event again is still an idempotent repeat.
    expect((await routes.push(sessionId, cookie, JSON.stringify(message('original', 'm1')))).status).toBe(200)
    // A generate naming a message in the same push is fine; a second one while it runs is a 409.
    const started = await routes.push(
      sessionId,
      cookie,
      JSON.stringify({ events: [message('q', 'm2'), { id: 'g2', type: 'generate', payload: { for: 'm2' } }] }),
    )
    expect(started.status).toBe(201)
    await refused([['a second answer while one runs', push({ type: 'generate', payload: { for: 'm2' } }), 409, 'conflict']])
    // Stop it, and asking again is allowed (the run is no longer running once cancelled).
    expect((await routes.push(sessionId, cookie, JSON.stringify({ type: 'cancelled', payload: { of: 'g2', lastSeenIndex: 2 } }))).status).toBe(201)
    expect((await routes.push(sessionId, cookie, JSON.stringify({ type: 'message', payload: { text: 'again', edits: 'm2' } }))).status).toBe(201)
  })

  it('finding 2: a state change needs JSON and a same-origin request', async () => {
    const { cookie, sessionId } = await routes.newUser()
    const body = JSON.stringify(message('csrf'))
    const post = (headers: Record<string, string>) => () => routes.push(sessionId, cookie, body, headers)
    await refused([
      ['text/plain form', post({ 'content-type': 'text/plain' }), 415, 'unsupported_media_type'],
      ['urlencoded form', post({ 'content-type': 'application/x-www-form-urlencoded' }), 415, 'unsupported_media_type'],
      ['cross-origin', post({ origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }), 403, 'cross_origin'],
      ['same-site sibling', post({ origin: 'http://sibling.localhost:3000', 'sec-fetch-site': 'same-site' }), 403, 'cross_origin'],
      ['origin null', post({ origin: 'null', 'sec-fetch-site': '' }), 403, 'cross_origin'],
      ['no origin at all', post({ origin: '', 'sec-fetch-site': '' }), 403, 'cross_origin'],
      [
        'cross-site rename',
        () =>
          routes.call('PATCH', `/api/sessions/${sessionId}`, {
            cookie,
            body: '{"title":"x"}',
            headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
          }),
        403,
        'cross_origin',
      ],
      [
        'cross-site create',
        () =>
          routes.call('POST', '/api/sessions', { cookie, body: '{}', headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' } }),
        403,
        'cross_origin',
      ],
    ])
    // A script with no browser headers, naming the origin itself, is fine.
    expect((await post({ 'sec-fetch-site': '' })()).status).toBe(201)
  })

  it('finding 2: over https the cookie is __Host-, Secure, SameSite=Lax, and a tossed plain cookie is ignored', async () => {
    const https = { base: 'https://chat.example', headers: { origin: 'https://chat.example' } }
    const first = await routes.call('GET', '/api/sessions', https)
    const setCookie = first.headers.get('set-cookie')!
    expect(setCookie).toMatch(/^__Host-a2_uid=u_/)
    expect(setCookie).toMatch(/; Secure/)
    expect(setCookie).toMatch(/; Path=\//)
    expect(setCookie).toMatch(/; SameSite=Lax/)
    expect(setCookie).not.toMatch(/Domain=/)
    // An attacker's sibling origin set a plain a2_uid (its own, validly signed): not an identity over https.
    const attacker = await routes.newUser()
    const tossed = await routes.call('POST', '/api/sessions', { ...https, cookie: attacker.cookie, body: '{}' })
    expect(tossed.status).toBe(201)
    expect(tossed.headers.get('set-cookie')).toMatch(/^__Host-a2_uid=/) // a fresh identity, not the attacker's
    const { session } = (await tossed.json()) as { session: { id: string } }
    expect((await routes.call('GET', `/api/sessions/${session.id}`, { cookie: attacker.cookie })).status).toBe(404)
  })

  it("finding 6: another user's session or run is a 404, like one that does not exist", async () => {
    const alice = await routes.newUser()
    const mallory = await routes.newUser()
    await routes.push(alice.sessionId, alice.cookie, JSON.stringify({ events: [message('hi', 'm'), { type: 'generate', payload: { for: 'm' } }] }))
    const { server } = await routes.chatServer.getChatServer()
    const [run] = await server.operator.listRuns({ owner: alice.userId })
    const id = alice.sessionId
    await refused([
      ['read', () => routes.call('GET', `/api/sessions/${id}`, { cookie: mallory.cookie }), 404, 'not_found'],
      ['snapshot', () => routes.call('GET', `/api/sessions/${id}/snapshot`, { cookie: mallory.cookie }), 404, 'not_found'],
      ['tail', () => routes.call('GET', `/api/sessions/${id}/events`, { cookie: mallory.cookie }), 404, 'not_found'],
      ['push', () => routes.push(id, mallory.cookie, JSON.stringify(message('x'))), 404, 'not_found'],
      ['rename', () => routes.call('PATCH', `/api/sessions/${id}`, { cookie: mallory.cookie, body: '{"title":"x"}' }), 404, 'not_found'],
      ['run', () => routes.call('GET', `/api/runs/${run.id}`, { cookie: mallory.cookie }), 404, 'not_found'],
    ])
  })

  it('finding 4: sessions per user, events and bytes per session are capped with clear errors', async () => {
    const { cookie, sessionId } = await routes.newUser() // session 1 of 3
    for (let i = 0; i < 2; i++) expect((await routes.call('POST', '/api/sessions', { cookie, body: '{}' })).status).toBe(201)
    await refused([['a fourth session', () => routes.call('POST', '/api/sessions', { cookie, body: '{}' }), 422, 'limit_reached']])

    const big = 'x'.repeat(15_000)
    expect((await routes.push(sessionId, cookie, JSON.stringify(message(big)))).status).toBe(201)
    expect((await routes.push(sessionId, cookie, JSON.stringify(message(big)))).status).toBe(201)
    await refused([['past 40 KiB pushed', () => routes.push(sessionId, cookie, JSON.stringify(message(big))), 413, 'session_full']])
    for (let i = 0; i < 4; i++) expect((await routes.push(sessionId, cookie, JSON.stringify(message(`m${i}`, `small${i}`)))).status).toBe(201)
    await refused([['a seventh event', () => routes.push(sessionId, cookie, JSON.stringify(message('one more'))), 413, 'session_full']])
    // A retry of a push that landed is still answered as the duplicate it is, full or not.
    expect((await routes.push(sessionId, cookie, JSON.stringify(message('m3', 'small3')))).status).toBe(200)
  })

  it('finding 4: SSE tails per user are capped, and a closed tail frees its place', async () => {
    const { cookie, sessionId } = await routes.newUser()
    const open = async () => {
      const controller = new AbortController()
      const response = await routes.call('GET', `/api/sessions/${sessionId}/events`, { cookie, signal: controller.signal })
      return { response, close: () => controller.abort() }
    }
    const a = await open()
    const b = await open()
    const c = await open()
    expect([a.response.status, b.response.status, c.response.status]).toEqual([200, 200, 429])
    expect(Number(c.response.headers.get('retry-after'))).toBeGreaterThan(0)
    a.close()
    await expect
      .poll(async () => {
        const d = await open()
        d.close()
        return d.response.status
      })
      .toBe(200)
    b.close()
  })

  it('finding 4: a body that trickles in is cut off with a 408', async () => {
    const { cookie, sessionId } = await routes.newUser()
    let pull = 0
    let cancelled!: () => void
    const givenUp = new Promise<void>((resolve) => (cancelled = resolve))
    const trickle = new ReadableStream<Uint8Array>({
      async pull(controller) {
        // One byte, then nothing until the server gives up on it: a client that holds the connection open.
        if (pull++ === 0) controller.enqueue(new TextEncoder().encode('{'))
        else await givenUp
      },
      cancel: () => cancelled(),
    })
    const started = Date.now()
    await refused([['a slow-drip body', () => routes.push(sessionId, cookie, trickle as unknown as string), 408, 'request_timeout']])
    expect(Date.now() - started).toBeLessThan(5_000)
  })
})
