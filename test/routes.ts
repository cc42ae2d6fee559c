/**
 * The app's route handlers, loaded as Next loads them, on a fresh data directory and the
 * given database — for tests that call them with a Request and read the Response.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

export async function loadRoutes(options: { databaseUrl?: string; env?: Record<string, string> } = {}) {
  process.env.A2_DATA_DIR = mkdtempSync(path.join(tmpdir(), 'a2-routes-'))
  if (options.databaseUrl) process.env.DATABASE_URL = options.databaseUrl
  else delete process.env.DATABASE_URL
  process.env.A2_EMBEDDED_WORKER = '0'
  Object.assign(process.env, options.env)
  ;(await import('@/lib/env')).resetEnvForTests()
  const routes = {
    sessions: await import('@/app/api/sessions/route'),
    events: await import('@/app/api/sessions/[id]/events/route'),
    snapshot: await import('@/app/api/sessions/[id]/snapshot/route'),
    chatServer: await import('@/lib/chat/server'),
  }
  return {
    ...routes,
    /** A new anonymous user: their cookie header, user id, and a session of theirs. */
    async newUser() {
      const response = await routes.sessions.GET(new Request('http://localhost/api/sessions'))
      const setCookie = response.headers.get('set-cookie')!
      const cookie = setCookie.split(';')[0]
      const userId = decodeURIComponent(cookie.split('=')[1]).split('.')[0]
      const created = await routes.sessions.POST(new Request('http://localhost/api/sessions', { method: 'POST', headers: { cookie } }))
      const { session } = (await created.json()) as { session: { id: string } }
      return { cookie, setCookie, userId, sessionId: session.id }
    },
    /** POSTs a raw body to a session's push route. */
    push(sessionId: string, cookie: string, body: string, headers: Record<string, string> = {}) {
      return routes.events.POST(
        new Request(`http://localhost/api/sessions/${sessionId}/events`, {
          method: 'POST',
          headers: { cookie, 'content-type': 'application/json', ...headers },
          body,
        }),
        { params: Promise.resolve({ id: sessionId }) },
      )
    },
  }
}
