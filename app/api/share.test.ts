/**
 * Share links and export through the HTTP surface: a link reads the chat (its fold and its
 * live tail) with no identity and writes nothing; revoking it ends an open tail within a
 * second and every later read is a 404; only the owner makes, revokes or exports.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadRoutes } from '@/test/routes'
import { createTestDb, layers, type TestDb } from '@/test/db'

describe.each(layers)('share links and export on %s', (kind) => {
  let testDb: TestDb
  let routes: Awaited<ReturnType<typeof loadRoutes>>
  beforeAll(async () => {
    testDb = await createTestDb(kind)
    routes = await loadRoutes({ databaseUrl: kind === 'postgres' ? testDb.url : undefined })
  })
  afterAll(async () => {
    await routes.chatServer.shutdownChatServer()
    await testDb.drop()
  })

  const message = (id: string, text: string) => JSON.stringify({ events: [{ id, type: 'message', payload: { text } }] })
  const anonymous = { 'sec-fetch-site': 'none', origin: '' }
  /** What the app's own fetch sends with a DELETE: a state change is JSON or it is refused (415). */
  const asJson = { 'content-type': 'application/json' }

  async function sharedChat() {
    const owner = await routes.newUser()
    expect((await routes.push(owner.sessionId, owner.cookie, message('m1', 'first words'))).status).toBe(201)
    const made = await routes.call('POST', `/api/sessions/${owner.sessionId}/share`, { cookie: owner.cookie, body: '{}' })
    expect(made.status).toBe(201)
    const { path } = (await made.json()) as { path: string }
    return { owner, token: path.replace('/s/', '') }
  }

  it('a link reads the chat with no identity, shows no owner, mints nothing and has no way to push', async () => {
    const { owner, token } = await sharedChat()
    const snapshot = await routes.call('GET', `/api/shared/${token}/snapshot`, { headers: anonymous })
    expect(snapshot.status).toBe(200)
    expect(snapshot.headers.get('set-cookie')).toBeNull()
    const body = await snapshot.text()
    expect(body).toContain('first words')
    expect(body).not.toContain(owner.userId)
    expect(routes.sharedEvents).not.toHaveProperty('POST') // Next answers 405 for a method a route lacks
    expect((await routes.push(owner.sessionId, '', message('x1', 'from the viewer'))).status).toBe(401)
  })

  it('the owner revokes: an open tail ends within a second, and the link reads nothing more', async () => {
    const { owner, token } = await sharedChat()
    const tail = await routes.call('GET', `/api/shared/${token}/sessions/${owner.sessionId}/events?after=-1`, { headers: anonymous })
    expect(tail.status).toBe(200)
    const reader = tail.body!.getReader()
    let seen = ''
    while (!seen.includes('first words')) seen += new TextDecoder().decode((await reader.read()).value)

    const revokedAt = Date.now()
    expect((await routes.call('DELETE', `/api/sessions/${owner.sessionId}/share`, { cookie: owner.cookie, headers: asJson })).status).toBe(204)
    for (;;) if ((await reader.read()).done) break
    expect(Date.now() - revokedAt).toBeLessThan(1_000)

    expect((await routes.call('GET', `/api/shared/${token}/snapshot`, { headers: anonymous })).status).toBe(404)
    expect((await routes.call('GET', `/api/shared/${token}/sessions/${owner.sessionId}/events`, { headers: anonymous })).status).toBe(404)
    expect((await (await routes.call('GET', `/api/sessions/${owner.sessionId}/share`, { cookie: owner.cookie })).json()) as unknown).toEqual({
      shared: false,
    })
  })

  it('a new link ends the old one; a link names only its own chat; a bad token is a 404', async () => {
    const { owner, token } = await sharedChat()
    const again = await routes.call('POST', `/api/sessions/${owner.sessionId}/share`, { cookie: owner.cookie, body: '{}' })
    const second = ((await again.json()) as { path: string }).path.replace('/s/', '')
    expect((await routes.call('GET', `/api/shared/${token}/snapshot`, { headers: anonymous })).status).toBe(404)
    expect((await routes.call('GET', `/api/shared/${second}/snapshot`, { headers: anonymous })).status).toBe(200)
    const other = await routes.newUser()
    expect((await routes.call('GET', `/api/shared/${second}/sessions/${other.sessionId}/events`, { headers: anonymous })).status).toBe(404)
    for (const bad of ['x', '%00', 'a'.repeat(43), '..%2f..'])
      expect((await routes.call('GET', `/api/shared/${bad}/snapshot`, { headers: anonymous })).status, bad).toBe(404)
  })

  it('only the owner shares, revokes and exports; a deleted chat takes its link with it', async () => {
    const { owner, token } = await sharedChat()
    const stranger = await routes.newUser()
    expect((await routes.call('POST', `/api/sessions/${owner.sessionId}/share`, { cookie: stranger.cookie, body: '{}' })).status).toBe(404)
    expect((await routes.call('DELETE', `/api/sessions/${owner.sessionId}/share`, { cookie: stranger.cookie, headers: asJson })).status).toBe(404)
    expect((await routes.call('GET', `/api/sessions/${owner.sessionId}/export`, { cookie: stranger.cookie })).status).toBe(404)
    expect((await routes.call('GET', `/api/sessions/${owner.sessionId}/export?format=pdf`, { cookie: owner.cookie })).status).toBe(400)

    const markdown = await routes.call('GET', `/api/sessions/${owner.sessionId}/export?format=markdown`, { cookie: owner.cookie })
    expect(markdown.headers.get('content-type')).toMatch(/^text\/markdown/)
    expect(await markdown.text()).toContain('## You\n\nfirst words')
    const json = (await (await routes.call('GET', `/api/sessions/${owner.sessionId}/export?format=json`, { cookie: owner.cookie })).json()) as {
      format: string
      turns: Array<{ role: string; versions: Array<{ text: string }> }>
    }
    expect(json.format).toBe('a2-chat-export@1')
    expect(json.turns[0]).toMatchObject({ role: 'user', versions: [{ text: 'first words' }] })

    expect((await routes.call('DELETE', `/api/sessions/${owner.sessionId}`, { cookie: owner.cookie, headers: asJson })).status).toBe(204)
    expect((await routes.call('GET', `/api/shared/${token}/snapshot`, { headers: anonymous })).status).toBe(404)
  })
})
