/**
 * The account's cookies on a public https deployment (A2_PUBLIC_URL), tried as an attacker
 * would: their flags (`__Host-`, Secure, HttpOnly, SameSite), a valid token carried under a
 * name without the prefix (which a subdomain or a plain-http page could set), and session
 * fixation: a token planted in the browser before sign-in never becomes the victim's session.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadRoutes } from '@/test/routes'
import { createTestDb, layers, type TestDb } from '@/test/db'

const PUBLIC = 'https://chat.example'
/** Each sign-up and sign-in hashes with scrypt (~0.1 s a core) and the first opens the store. */
const ACCOUNT_MS = 90_000

describe.each(layers)('account cookies over https on %s', (kind) => {
  let testDb: TestDb
  let routes: Awaited<ReturnType<typeof loadRoutes>>

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    routes = await loadRoutes({ databaseUrl: kind === 'postgres' ? testDb.url : undefined, env: { A2_PUBLIC_URL: PUBLIC } })
  })
  afterAll(async () => {
    await routes.chatServer.shutdownChatServer()
    await testDb.drop()
  })

  let peers = 0
  /** A browser on the public origin, from an address of its own (the per-address sign-in limit is another test's subject). */
  const onPublic = (cookie = '') => ({
    base: PUBLIC,
    cookie,
    headers: { origin: PUBLIC, 'sec-fetch-site': 'same-origin', 'x-a2-peer': `198.18.1.${++peers}` },
  })
  const json = (body: unknown) => JSON.stringify(body)
  const sessionCookie = (response: Response) => response.headers.getSetCookie().find((line) => line.includes('session_token='))
  const pair = (line: string | undefined) => line?.split(';')[0] ?? ''

  async function account(email: string, password: string, cookie = '') {
    const up = await routes.call('POST', '/api/auth/sign-up/email', { ...onPublic(cookie), body: json({ name: 'A', email, password }) })
    expect(up.status, await up.clone().text()).toBe(200)
    return signIn(email, password, cookie)
  }
  function signIn(email: string, password: string, cookie = '') {
    return routes.call('POST', '/api/auth/sign-in/email', { ...onPublic(cookie), body: json({ email, password }) })
  }
  async function whoIs(cookie: string): Promise<string | undefined> {
    const response = await routes.call('GET', '/api/auth/get-session', onPublic(cookie))
    expect(response.status).toBe(200)
    return ((await response.json()) as { user?: { email: string } } | null)?.user?.email
  }
  async function chats(cookie: string): Promise<string[]> {
    const listed = await routes.call('GET', '/api/sessions', onPublic(cookie))
    expect(listed.status).toBe(200)
    return ((await listed.json()) as { sessions: Array<{ id: string }> }).sessions.map((s) => s.id)
  }

  it(
    'the session cookie is __Host-, Secure, HttpOnly and SameSite=Lax, with no Domain; so is the guest’s',
    async () => {
      const signedIn = await account('flags@example.com', 'a long enough one')
      expect(signedIn.status).toBe(200)
      const line = sessionCookie(signedIn)
      expect(line).toMatch(/^__Host-a2\.session_token=/)
      const attributes = line!
        .split(/;\s*/)
        .slice(1)
        .map((a) => a.toLowerCase())
      expect(attributes).toEqual(expect.arrayContaining(['path=/', 'httponly', 'secure', 'samesite=lax']))
      expect(attributes.some((a) => a.startsWith('domain='))).toBe(false)
      // Every cookie the account sets carries the prefix (a cookie without it could be planted by a subdomain).
      for (const set of signedIn.headers.getSetCookie()) expect(set).toMatch(/^__Host-/)

      const guest = await routes.call('GET', '/api/sessions', onPublic())
      const guestLine = guest.headers.getSetCookie().find((l) => l.includes('a2_uid='))
      expect(guestLine).toMatch(/^__Host-a2_uid=.*; HttpOnly; SameSite=Lax; .*Secure/)
    },
    ACCOUNT_MS,
  )

  it(
    'a valid token under a name without __Host- is no account over https',
    async () => {
      const token = pair(sessionCookie(await account('names@example.com', 'a long enough one')))
        .split('=')
        .slice(1)
        .join('=')
      expect(token).not.toBe('')
      expect(await whoIs(`__Host-a2.session_token=${token}`)).toBe('names@example.com')
      for (const name of ['a2.session_token', '__Secure-a2.session_token']) {
        expect(await whoIs(`${name}=${token}`), name).toBeUndefined()
        // The chat routes read no account from it either: the list is a new guest's, empty.
        expect(await chats(`${name}=${token}`), name).toEqual([])
      }
    },
    ACCOUNT_MS,
  )

  it(
    'session fixation: a token planted before sign-in is replaced, and never reads the victim’s account',
    async () => {
      // The attacker's own valid session, and a token nobody issued, each planted in the victim's browser.
      const attacker = pair(sessionCookie(await account('attacker@example.com', 'the attacker’s password')))
      await account('victim@example.com', 'the victim’s password')
      for (const planted of [attacker, '__Host-a2.session_token=made-up-by-the-attacker.c2lnbmF0dXJl']) {
        const signedIn = await signIn('victim@example.com', 'the victim’s password', planted)
        expect(signedIn.status).toBe(200)
        const issued = pair(sessionCookie(signedIn))
        expect(issued).toMatch(/^__Host-a2\.session_token=/)
        expect(issued).not.toBe(planted)
        expect(await whoIs(issued)).toBe('victim@example.com')
        // What the attacker holds is still theirs alone (or nothing): never the victim's session.
        expect(await whoIs(planted)).not.toBe('victim@example.com')
      }
      expect(await whoIs(attacker)).toBe('attacker@example.com')
    },
    ACCOUNT_MS,
  )
})
