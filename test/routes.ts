/**
 * The app's route handlers, loaded as Next loads them, on a fresh data directory and the
 * given database — for tests that call them with a Request and read the Response.
 * Requests are same-origin browser requests unless a test says otherwise (CSRF checks).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

export const BASE = 'http://localhost:3000'

/** What a same-origin fetch from the app's own page carries. */
export const SAME_ORIGIN = { origin: BASE, 'sec-fetch-site': 'same-origin', 'x-a2-peer': '203.0.113.7' }

/** Every limit off unless a test sets it: tests of one thing are not throttled by another. */
export const HIGH_LIMITS: Record<string, string> = {
  A2_RATE_PUSHES_PER_MIN: '1000000',
  A2_RATE_GENERATIONS_PER_MIN: '1000000',
  A2_RATE_IDENTITIES_PER_MIN_PER_ADDRESS: '1000000',
  A2_RATE_PUSHES_PER_MIN_PER_ADDRESS: '1000000',
  A2_RATE_GENERATIONS_PER_MIN_PER_ADDRESS: '1000000',
  A2_MAX_RUNNING_GENERATIONS_PER_USER: '1000000',
  A2_MAX_RUNNING_GENERATIONS: '1000000',
}

type Handler = (request: Request, context: { params: Promise<Record<string, string>> }) => Promise<Response>

export async function loadRoutes(options: { databaseUrl?: string; env?: Record<string, string> } = {}) {
  process.env.A2_DATA_DIR = mkdtempSync(path.join(tmpdir(), 'a2-routes-'))
  if (options.databaseUrl) process.env.DATABASE_URL = options.databaseUrl
  else delete process.env.DATABASE_URL
  process.env.A2_EMBEDDED_WORKER = '0'
  Object.assign(process.env, HIGH_LIMITS, options.env)
  ;(await import('@/lib/env')).resetEnvForTests()
  const routes = {
    sessions: await import('@/app/api/sessions/route'),
    session: await import('@/app/api/sessions/[id]/route'),
    events: await import('@/app/api/sessions/[id]/events/route'),
    snapshot: await import('@/app/api/sessions/[id]/snapshot/route'),
    runs: await import('@/app/api/runs/route'),
    run: await import('@/app/api/runs/[id]/route'),
    effect: await import('@/app/api/runs/[id]/effects/[key]/route'),
    notes: await import('@/app/api/notes/route'),
    auth: await import('@/app/api/auth/[...all]/route'),
    operator: await import('@/app/api/operator/route'),
    share: await import('@/app/api/sessions/[id]/share/route'),
    exported: await import('@/app/api/sessions/[id]/export/route'),
    sharedSnapshot: await import('@/app/api/shared/[token]/snapshot/route'),
    sharedEvents: await import('@/app/api/shared/[token]/sessions/[id]/events/route'),
    chatServer: await import('@/lib/chat/server/chat-server'),
    files: await import('@/app/api/files/route'),
    file: await import('@/app/api/files/[id]/route'),
    sharedFile: await import('@/app/api/shared/[token]/files/[id]/route'),
  }
  /** [pattern, module] in match order: the handler for a path, as Next's router picks it. */
  const table: Array<[RegExp, Record<string, unknown>, string[]]> = [
    [/^\/api\/sessions$/, routes.sessions, []],
    [/^\/api\/sessions\/([^/]+)$/, routes.session, ['id']],
    [/^\/api\/sessions\/([^/]+)\/events$/, routes.events, ['id']],
    [/^\/api\/sessions\/([^/]+)\/snapshot$/, routes.snapshot, ['id']],
    [/^\/api\/sessions\/([^/]+)\/share$/, routes.share, ['id']],
    [/^\/api\/sessions\/([^/]+)\/export$/, routes.exported, ['id']],
    [/^\/api\/shared\/([^/]+)\/snapshot$/, routes.sharedSnapshot, ['token']],
    [/^\/api\/shared\/([^/]+)\/sessions\/([^/]+)\/events$/, routes.sharedEvents, ['token', 'id']],
    [/^\/api\/files$/, routes.files, []],
    [/^\/api\/files\/([^/]+)$/, routes.file, ['id']],
    [/^\/api\/shared\/([^/]+)\/files\/([^/]+)$/, routes.sharedFile, ['token', 'id']],
    [/^\/api\/runs$/, routes.runs, []],
    [/^\/api\/runs\/([^/]+)$/, routes.run, ['id']],
    [/^\/api\/runs\/([^/]+)\/effects\/([^/]+)$/, routes.effect, ['id', 'key']],
    [/^\/api\/notes$/, routes.notes, []],
    [/^\/api\/auth\/.+$/, routes.auth, []],
    [/^\/api\/operator$/, routes.operator, []],
  ]

  /** Hands `request` to the route for its path as Next's router would, headers as they are. */
  function dispatch(request: Request): Promise<Response> | undefined {
    const url = new URL(request.url)
    for (const [pattern, module, names] of table) {
      const match = pattern.exec(url.pathname)
      if (!match) continue
      const handler = module[request.method] as Handler | undefined
      if (!handler) throw new Error(`no ${request.method} handler for ${url.pathname}`)
      // Next hands route params over decoded.
      const params = Object.fromEntries(names.map((name, i) => [name, safeDecode(match[i + 1])]))
      return handler(request, { params: Promise.resolve(params) })
    }
    return undefined
  }

  /** Calls the route for `pathAndQuery` as Next would; headers default to a same-origin browser fetch. */
  async function call(
    method: string,
    pathAndQuery: string,
    init: {
      cookie?: string
      body?: string | Uint8Array | ReadableStream<Uint8Array>
      headers?: Record<string, string>
      base?: string
      signal?: AbortSignal
    } = {},
  ): Promise<Response> {
    const url = new URL(pathAndQuery, init.base ?? BASE)
    if (table.some(([pattern]) => pattern.test(url.pathname))) {
      const headers: Record<string, string> = {
        ...SAME_ORIGIN,
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...init.headers,
      }
      if (init.cookie) headers.cookie = init.cookie
      const request = new Request(url, {
        method,
        headers,
        body: init.body as BodyInit | undefined,
        signal: init.signal,
        ...(init.body instanceof ReadableStream ? { duplex: 'half' } : {}),
      } as RequestInit)
      const response = dispatch(request)
      if (response) return response
    }
    throw new Error(`no route for ${url.pathname}`)
  }

  return {
    ...routes,
    call,
    dispatch,
    /** A new anonymous user: their cookie header, user id, and a session of theirs. */
    async newUser(headers: Record<string, string> = {}) {
      const response = await call('GET', '/api/sessions', { headers })
      const setCookie = response.headers.get('set-cookie')
      if (!setCookie) throw new Error(`no identity was created: ${response.status} ${await response.text()}`)
      const cookie = setCookie.split(';')[0]
      const userId = decodeURIComponent(cookie.slice(cookie.indexOf('=') + 1)).split('.')[0]
      const created = await call('POST', '/api/sessions', { cookie, body: '{}', headers })
      const { session } = (await created.json()) as { session: { id: string } }
      return { cookie, setCookie, userId, sessionId: session.id }
    },
    /** POSTs a raw body to a session's push route. */
    push(sessionId: string, cookie: string, body: string, headers: Record<string, string> = {}) {
      return call('POST', `/api/sessions/${sessionId}/events`, { cookie, body, headers })
    },
  }
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}
