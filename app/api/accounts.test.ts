/**
 * Accounts through the HTTP surface, as a browser uses them: a guest's chats move to the
 * account they sign up into, a second device signed into it lists and writes the same chats,
 * nobody else reads them, verification and reset links arrive in the mail outbox (never
 * "sent"), operator-by-email needs a verified email, and password guessing is limited.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { loadRoutes } from '@/test/routes'
import { createTestDb, layers, type TestDb } from '@/test/db'

const OPERATOR_EMAIL = 'ops@example.com'
/** The daily token budget per user: one test spends it as a guest. */
const BUDGET = 1_000
/** Each sign-up and sign-in hashes with scrypt (~0.1 s a core here) and the first opens the store: 21 s on PGlite at load 10. */
const ACCOUNT_MS = 90_000

describe.each(layers)('accounts on %s', (kind) => {
  let testDb: TestDb
  let routes: Awaited<ReturnType<typeof loadRoutes>>

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    routes = await loadRoutes({
      databaseUrl: kind === 'postgres' ? testDb.url : undefined,
      env: { A2_OPERATOR_EMAILS: OPERATOR_EMAIL, A2_DAILY_TOKENS_PER_USER: String(BUDGET) },
    })
  })
  afterAll(async () => {
    await routes.chatServer.shutdownChatServer()
    await testDb.drop()
  })

  const json = (body: unknown) => JSON.stringify(body)
  /** The cookies a response sets, as one Cookie header (an emptied cookie dropped, as a browser drops it). */
  function cookiesFrom(response: Response, previous = ''): string {
    const jar = new Map(
      previous
        .split('; ')
        .filter(Boolean)
        .map((c) => [c.slice(0, c.indexOf('=')), c] as const),
    )
    for (const line of response.headers.getSetCookie()) {
      const pair = line.split(';')[0]
      const name = pair.slice(0, pair.indexOf('='))
      if (/max-age=0/i.test(line) || pair.endsWith('=')) jar.delete(name)
      else jar.set(name, pair)
    }
    return [...jar.values()].join('; ')
  }
  async function mail(to: string): Promise<Array<{ subject: string; link: string }>> {
    const { server } = await routes.chatServer.getChatServer()
    void server
    const { getStore } = await import('@/lib/store')
    const store = await getStore()
    const result = (await store.db.execute(sql`select subject, link from mail_outbox where "to" = ${to} order by id`)) as unknown
    return (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Array<{ subject: string; link: string }>
  }
  async function titles(cookie: string): Promise<string[]> {
    const listed = await routes.call('GET', '/api/sessions', { cookie })
    expect(listed.status).toBe(200)
    const { sessions } = (await listed.json()) as { sessions: Array<{ id: string; title: string }> }
    return sessions.map((s) => s.id)
  }
  /**
   * Each call from an address of its own (TEST-NET-2, 198.18.0.0/15): the per-address sign-in
   * limit (10 a minute) is its own test's subject, not every test's.
   */
  let peers = 0
  const peer = () => ({ 'x-a2-peer': `198.18.${Math.floor(++peers / 250)}.${peers % 250}` })

  /** As the page does it: a sign-up (which signs nobody in), then a sign-in. */
  async function signUp(email: string, password: string, cookie = '') {
    const response = await routes.call('POST', '/api/auth/sign-up/email', { cookie, headers: peer(), body: json({ name: 'Ada', email, password }) })
    expect(response.status, await response.clone().text()).toBe(200)
    expect(response.headers.getSetCookie().filter((c) => c.includes('session_token'))).toEqual([])
    const signedIn = await routes.call('POST', '/api/auth/sign-in/email', { cookie, headers: peer(), body: json({ email, password }) })
    expect(signedIn.status, await signedIn.clone().text()).toBe(200)
    return cookiesFrom(signedIn, cookie)
  }
  async function signIn(email: string, password: string, cookie = '') {
    return routes.call('POST', '/api/auth/sign-in/email', { cookie, headers: peer(), body: json({ email, password }) })
  }

  it(
    'a guest who signs up keeps their chats; a second device signed in lists them and writes to them; nobody else can',
    async () => {
      const guest = await routes.newUser()
      const pushed = await routes.push(
        guest.sessionId,
        guest.cookie,
        json({ events: [{ id: 'm1', type: 'message', payload: { text: 'from the guest' } }] }),
      )
      expect(pushed.status).toBe(201)

      const laptop = await signUp('ada@example.com', 'correct horse battery', guest.cookie)
      expect(laptop).not.toContain('a2_uid=') // the guest identity is spent
      expect(laptop).toContain('a2.session_token=')
      expect(await titles(laptop)).toEqual([guest.sessionId])
      expect(await titles(guest.cookie)).toEqual([]) // the old guest cookie names nobody's chats now

      const phoneSignIn = await signIn('ada@example.com', 'correct horse battery')
      expect(phoneSignIn.status).toBe(200)
      const phone = cookiesFrom(phoneSignIn)
      expect(await titles(phone)).toEqual([guest.sessionId])
      const fromPhone = await routes.push(
        guest.sessionId,
        phone,
        json({ events: [{ id: 'm2', type: 'message', payload: { text: 'from the phone' } }] }),
      )
      expect(fromPhone.status).toBe(201)
      const snapshot = await routes.call('GET', `/api/sessions/${guest.sessionId}/snapshot`, { cookie: laptop })
      expect(JSON.stringify(await snapshot.json())).toMatch(/from the guest.*from the phone/)

      const stranger = await routes.newUser()
      expect((await routes.call('GET', `/api/sessions/${guest.sessionId}/snapshot`, { cookie: stranger.cookie })).status).toBe(404)
      expect(
        (await routes.push(guest.sessionId, stranger.cookie, json({ events: [{ id: 'x', type: 'message', payload: { text: 'no' } }] }))).status,
      ).toBe(404)
      expect(await titles(stranger.cookie)).toEqual([stranger.sessionId])

      // A signed-out session's cookie, replayed, reads nothing of the account's.

      expect((await routes.call('POST', '/api/auth/sign-out', { cookie: phone, body: '{}' })).status).toBe(200)

      expect(await titles(phone)).not.toContain(guest.sessionId)

      // Signing in (not up) from a guest with chats of its own moves those too, and only those.
      const phoneGuest = await routes.newUser()
      const merged = cookiesFrom(await signIn('ada@example.com', 'correct horse battery', phoneGuest.cookie), phoneGuest.cookie)
      expect((await titles(merged)).sort()).toEqual([guest.sessionId, phoneGuest.sessionId].sort())
      expect(await titles(stranger.cookie)).toEqual([stranger.sessionId])
    },
    ACCOUNT_MS,
  )

  it(
    'verification and reset links land in the mail outbox; operator by email needs the email verified',
    async () => {
      const cookie = await signUp(OPERATOR_EMAIL, 'first password 1')
      const isOperator = async (c: string) =>
        ((await (await routes.call('GET', '/api/operator', { cookie: c })).json()) as { operator: boolean }).operator
      expect(await isOperator(cookie)).toBe(false) // an unverified email is only a claim

      const [verify] = await mail(OPERATOR_EMAIL)
      expect(verify.subject).toMatch(/verify/i)
      const verified = await routes.call('GET', new URL(verify.link).pathname + new URL(verify.link).search, { cookie })
      expect([200, 302]).toContain(verified.status)
      const after = cookiesFrom(await signIn(OPERATOR_EMAIL, 'first password 1'))
      expect(await isOperator(after)).toBe(true)

      const requested = await routes.call('POST', '/api/auth/request-password-reset', {
        body: json({ email: OPERATOR_EMAIL, redirectTo: '/account/reset' }),
      })
      expect(requested.status).toBe(200)
      const reset = (await mail(OPERATOR_EMAIL)).find((m) => /reset/i.test(m.subject))!
      const landing = await routes.call('GET', new URL(reset.link).pathname + new URL(reset.link).search)
      expect(landing.status).toBe(302)
      const token = new URL(landing.headers.get('location')!, 'http://localhost:3000').searchParams.get('token')!
      expect(token).toBeTruthy()
      expect((await routes.call('POST', '/api/auth/reset-password', { body: json({ token, newPassword: 'second password 2' }) })).status).toBe(200)
      expect((await signIn(OPERATOR_EMAIL, 'first password 1')).status).toBe(401)
      expect((await signIn(OPERATOR_EMAIL, 'second password 2')).status).toBe(200)
      // The reset ended the session signed in with the old password: its cookie is nobody's now, at once.
      expect(await isOperator(after)).toBe(false)
    },
    ACCOUNT_MS,
  )

  it(
    'on a host that is not the app’s (no A2_PUBLIC_URL, not loopback) accounts answer a 4xx, never a 500',
    async () => {
      const cookie = await signUp('h@example.com', 'the real password')
      const elsewhere = { base: 'http://chat.example', headers: { origin: 'http://chat.example' } }
      const signIn = await routes.call('POST', '/api/auth/sign-in/email', {
        ...elsewhere,
        body: json({ email: 'h@example.com', password: 'the real password' }),
      })
      expect(signIn.status).toBe(400)
      // A session cookie brought to that host is no account there (and no 500): the list mints a guest.
      const listed = await routes.call('GET', '/api/sessions', { ...elsewhere, cookie })
      expect(listed.status).toBe(200)
    },
    ACCOUNT_MS,
  )

  it(
    'keeps the CSRF rule of every route: a cross-site or non-JSON sign-in is refused and signs nobody in',

    async () => {
      await signUp('e@example.com', 'the real password')

      const body = json({ email: 'e@example.com', password: 'the real password' })

      const crossSite = await routes.call('POST', '/api/auth/sign-in/email', {
        body,
        headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      })

      expect(crossSite.status).toBe(403)

      expect(crossSite.headers.getSetCookie()).toEqual([])

      const form = await routes.call('POST', '/api/auth/sign-in/email', { body, headers: { 'content-type': 'text/plain' } })

      expect(form.status).toBe(415)

      expect(form.headers.getSetCookie()).toEqual([])
    },

    ACCOUNT_MS,
  )

  it(
    'every state-changing auth route refuses a cross-site or non-JSON request with the session cookie, and changes nothing',
    async () => {
      const cookie = await signUp('csrf@example.com', 'the real password')
      const routesThatWrite = [
        ['/api/auth/sign-out', {}],
        ['/api/auth/revoke-sessions', {}],
        ['/api/auth/delete-user', {}],
        ['/api/auth/update-user', { name: 'Mallory' }],
        ['/api/auth/change-password', { currentPassword: 'the real password', newPassword: 'chosen by the attacker', revokeOtherSessions: true }],
        ['/api/auth/change-email', { newEmail: 'mallory@example.com' }],
        ['/api/auth/sign-up/email', { name: 'M', email: 'csrf2@example.com', password: 'the attacker’s one' }],
        ['/api/auth/request-password-reset', { email: 'csrf@example.com', redirectTo: '/account/reset' }],
        ['/api/auth/passkey/delete-passkey', { id: 'any' }],
      ] as const
      for (const [path, body] of routesThatWrite) {
        const crossSite = await routes.call('POST', path, {
          cookie,
          body: json(body),
          headers: { ...peer(), origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
        })
        expect(crossSite.status, path).toBe(403)
        expect(crossSite.headers.getSetCookie(), path).toEqual([])
        const form = await routes.call('POST', path, { cookie, body: json(body), headers: { ...peer(), 'content-type': 'text/plain' } })
        expect(form.status, path).toBe(415)
      }
      // Still signed in, as before, with the same name, email and password; no account was made, no mail queued.
      const me = (await (await routes.call('GET', '/api/auth/get-session', { cookie })).json()) as { user: { name: string; email: string } }
      expect(me.user).toMatchObject({ name: 'Ada', email: 'csrf@example.com' })
      expect((await signIn('csrf@example.com', 'the real password')).status).toBe(200)
      expect((await signIn('csrf2@example.com', 'the attacker’s one')).status).toBe(401)
      expect((await mail('csrf@example.com')).filter((m) => /reset/i.test(m.subject))).toEqual([])
    },
    ACCOUNT_MS,
  )

  it(
    'a taken email is not told apart from a new one at sign-up (same answer), and writes no account; a short password is a 400',
    async () => {
      const short = await routes.call('POST', '/api/auth/sign-up/email', { body: json({ name: 'B', email: 'b@example.com', password: 'short' }) })
      expect(short.status).toBe(400)
      await signUp('c@example.com', 'a long enough one')
      const shape = (body: { token: unknown; user: Record<string, unknown> }) => ({
        token: body.token,
        keys: Object.keys(body.user).sort(),
        email: body.user.email,
      })
      const taken = await routes.call('POST', '/api/auth/sign-up/email', {
        body: json({ name: 'C', email: 'c@example.com', password: 'another long one' }),
      })
      const fresh = await routes.call('POST', '/api/auth/sign-up/email', {
        body: json({ name: 'C', email: 'c2@example.com', password: 'another long one' }),
      })
      expect(taken.status).toBe(fresh.status)
      const [a, b] = [shape(await taken.json()), shape(await fresh.json())]
      expect({ ...a, email: undefined }).toEqual({ ...b, email: undefined })
      // The taken one's account is unchanged: its own password still signs in, the other does not.
      expect((await signIn('c@example.com', 'a long enough one')).status).toBe(200)
      expect((await signIn('c@example.com', 'another long one')).status).toBe(401)
      expect((await mail('c@example.com')).some((m) => /tried to create/.test(m.subject))).toBe(true)
      expect((await signIn('b@example.com', 'short')).status).toBe(401)
    },
    ACCOUNT_MS,
  )

  it(
    'an unknown email is not told apart from a known one at sign-in and at a reset request: same answer, and no faster',
    async () => {
      await signUp('known@example.com', 'the real password')
      const attempt = async (email: string) => {
        const started = performance.now()
        const response = await signIn(email, 'a wrong password')
        return { ms: performance.now() - started, status: response.status, body: await response.text() }
      }
      const known: Array<Awaited<ReturnType<typeof attempt>>> = []
      const unknown: typeof known = []
      // Alternated, so a busy moment of the machine falls on both.
      for (let i = 0; i < 5; i++) {
        known.push(await attempt('known@example.com'))
        unknown.push(await attempt(`nobody${i}@example.com`))
      }
      expect(new Set([...known, ...unknown].map((a) => `${a.status} ${a.body}`)).size).toBe(1)
      expect(known[0].status).toBe(401)
      // A known email's wrong password costs a scrypt verification (~0.1 s a core); an unknown one hashes the
      // password too. Without that it answers in ~1 ms, 100× sooner: the bound is far from both.
      const median = (xs: Array<{ ms: number }>) => xs.map((x) => x.ms).sort((a, b) => a - b)[2]
      expect(median(unknown) / median(known)).toBeGreaterThan(0.3)

      const reset = (email: string) =>
        routes.call('POST', '/api/auth/request-password-reset', { headers: peer(), body: json({ email, redirectTo: '/account/reset' }) })
      const [forKnown, forUnknown] = [await reset('known@example.com'), await reset('nobody@example.com')]
      expect(forKnown.status).toBe(200)
      expect([forUnknown.status, await forUnknown.text()]).toEqual([forKnown.status, await forKnown.text()])
    },
    ACCOUNT_MS,
  )

  it(
    'signing out on all devices revokes every session of the account: neither device reads its chats after',
    async () => {
      const guest = await routes.newUser()
      await routes.push(guest.sessionId, guest.cookie, json({ events: [{ id: 'r1', type: 'message', payload: { text: 'mine' } }] }))
      const laptop = await signUp('everywhere@example.com', 'the real password', guest.cookie)
      const phone = cookiesFrom(await signIn('everywhere@example.com', 'the real password'))
      expect(await titles(phone)).toEqual([guest.sessionId])
      const revoked = await routes.call('POST', '/api/auth/revoke-sessions', { cookie: phone, body: '{}' })
      expect(revoked.status, await revoked.clone().text()).toBe(200)
      for (const cookie of [laptop, phone]) {
        expect(await titles(cookie)).not.toContain(guest.sessionId)
        expect((await routes.call('GET', `/api/sessions/${guest.sessionId}/snapshot`, { cookie })).status).toBe(401) // no identity: nobody
      }
    },
    ACCOUNT_MS,
  )

  it(
    'a guest who spent the day’s tokens and signs up gets no fresh allowance, on any device of the account',
    async () => {
      const guest = await routes.newUser()
      const { server } = await routes.chatServer.getChatServer()
      // 600 tokens in a chat the guest keeps, 400 in one they deleted: the budget counts both.
      const spent = async (sessionId: string, n: number, tokens: number) =>
        server.append(
          sessionId,
          { id: `spent-m${n}`, type: 'message', payload: { text: `question ${n}` } },
          { id: `spent-g${n}`, type: 'generate', payload: { for: `spent-m${n}` } },
          { type: 'finished', payload: { of: `spent-g${n}`, attempt: 1, reason: 'cancelled', usage: { inputTokens: tokens, counted: true } } },
        )
      await spent(guest.sessionId, 1, 600)
      const deletedChat = await server.sessions.create(guest.userId)
      await spent(deletedChat.id, 2, 400)
      const deleted = await routes.call('DELETE', `/api/sessions/${deletedChat.id}`, {
        cookie: guest.cookie,
        headers: { 'content-type': 'application/json' },
      })
      expect(deleted.status).toBe(204)

      const laptop = await signUp('spent@example.com', 'the real password', guest.cookie)
      const phone = cookiesFrom(await signIn('spent@example.com', 'the real password'))
      for (const [n, cookie] of [laptop, phone].entries()) {
        const asked = await routes.push(
          guest.sessionId,
          cookie,
          json({
            events: [
              { id: `more${n}`, type: 'message', payload: { text: 'one more' } },
              { type: 'generate', payload: { for: `more${n}` } },
            ],
          }),
        )
        expect(asked.status).toBe(429)
        expect(((await asked.json()) as { error: { message: string } }).error.message).toMatch(/model tokens \(1000\)/)
      }
    },
    ACCOUNT_MS,
  )

  it(
    'deleting the account leaves no row of it in any table, on either store',
    async () => {
      const guest = await routes.newUser()
      await routes.push(guest.sessionId, guest.cookie, json({ events: [{ id: 'd1', type: 'message', payload: { text: 'to be erased' } }] }))
      const cookie = await signUp('gone@example.com', 'a password to forget', guest.cookie)
      const [chat] = await titles(cookie)
      expect((await routes.call('POST', `/api/sessions/${chat}/share`, { cookie, body: '{}' })).status).toBe(201)
      const me = (await (await routes.call('GET', '/api/auth/get-session', { cookie })).json()) as { user: { id: string } }
      expect(me.user.id).toBeTruthy()

      const deleted = await routes.call('POST', '/api/auth/delete-user', { cookie, body: '{}' })
      expect(deleted.status, await deleted.clone().text()).toBe(200)

      const { getStore } = await import('@/lib/store')
      const store = await getStore()
      const rows = async (statement: ReturnType<typeof sql>) => {
        const result = (await store.db.execute(statement)) as unknown
        return (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Array<Record<string, unknown>>
      }
      const columns = (await rows(
        sql`select table_name, column_name from information_schema.columns
            where table_schema = 'public' and data_type in ('text', 'jsonb', 'json', 'character varying')`,
      )) as Array<{ table_name: string; column_name: string }>
      expect(columns.length).toBeGreaterThan(20)
      const found: string[] = []
      for (const { table_name, column_name } of columns) {
        const column = sql.raw(`"${column_name}"::text`)
        const table = sql.raw(`"${table_name}"`)
        const [{ n }] = (await rows(
          sql`select count(*)::int as n from ${table} where ${column} like ${`%${me.user.id}%`} or lower(${column}) like '%gone@example.com%'`,
        )) as Array<{ n: number }>
        if (n > 0) found.push(`${table_name}.${column_name}: ${n}`)
      }
      expect(found).toEqual([])
      expect((await routes.call('GET', `/api/sessions/${chat}/snapshot`, { cookie })).status).toBe(401)
    },
    ACCOUNT_MS,
  )

  it(
    'limits password guessing per account too, from any number of addresses',
    async () => {
      await signUp('f@example.com', 'the real password')
      const statuses: number[] = []
      for (let i = 0; i < 11; i++) {
        const headers = { 'x-a2-peer': `198.51.100.${100 + i}` }
        statuses.push(
          (await routes.call('POST', '/api/auth/sign-in/email', { headers, body: json({ email: 'F@example.com', password: `guess ${i}` }) })).status,
        )
      }
      // The sign-in that followed the sign-up was the first of the minute's 10: 9 guesses, then 429 from everywhere.
      expect(statuses.slice(0, 9), statuses.join(' ')).toEqual(Array(9).fill(401))
      expect(statuses.slice(9)).toEqual([429, 429])
    },
    ACCOUNT_MS,
  )

  it(
    'limits password guessing per address, shared through the database',
    async () => {
      await signUp('d@example.com', 'the real password')
      const headers = { 'x-a2-peer': '198.51.100.9' }
      const statuses: number[] = []
      for (let i = 0; i < 12; i++) {
        statuses.push(
          // A different account each time: the address's limit alone, not the account's.
          (await routes.call('POST', '/api/auth/sign-in/email', { headers, body: json({ email: `d${i}@example.com`, password: `guess ${i}` }) }))
            .status,
        )
      }
      expect(statuses.slice(0, 10), statuses.join(' ')).toEqual(Array(10).fill(401))
      expect(statuses.slice(10)).toEqual([429, 429])
    },
    ACCOUNT_MS,
  )
})
