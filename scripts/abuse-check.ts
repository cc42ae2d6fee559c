/**
 * A black-box abuse check against a running app, over plain HTTP from one address with no
 * cookies to start with — what issue 14 did by hand, as a repeatable script:
 *
 *   - one address cannot start more than A2_RATE_GENERATIONS_PER_MIN_PER_ADDRESS generations
 *     a minute, however many identities it mints;
 *   - every request of findings 2–4 (CSRF and cookie tossing, input a server could answer with a 500,
 *     caps) answers a 4xx, and nothing is written (checked through the API: session heads,
 *     titles and the session list do not move);
 *   - the security headers are on `/` and on API answers;
 *   - a signed-in end user gets 403 or 404 from every operator route.
 *
 *   A2_RATE_GENERATIONS_PER_MIN_PER_ADDRESS=5 … npx tsx scripts/abuse-check.ts http://127.0.0.1:3000
 *
 * Give it the limits the app runs with (the same A2_* variables; see docs/deploying.md). It
 * needs a fresh minute of the address's generation budget, and a few dozen identities from the
 * address's identity budget. e2e/abuse-check.spec.ts runs it
 * against a built app of its own.
 */
import http from 'node:http'
import { pathToFileURL } from 'node:url'

export interface AbuseCheckLimits {
  generationsPerMinutePerAddress: number
  maxSessionsPerUser: number
  maxPushedBytesPerSession: number
  maxTailsPerUser: number
  bodyTimeoutMs: number
}

export interface Check {
  name: string
  ok: boolean
  detail: string
}

interface Answer {
  status: number
  headers: http.IncomingHttpHeaders
  text: string
}

export async function abuseCheck(base: string, limits: AbuseCheckLimits): Promise<Check[]> {
  const origin = new URL(base).origin
  const checks: Check[] = []
  const check = (name: string, ok: boolean, detail: string) => checks.push({ name, ok, detail })

  /** One request; `origin` and JSON by default, as the app's own page sends them. */
  function send(method: string, path: string, options: { cookie?: string; body?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = {
        ...(method === 'GET' ? {} : { origin, 'content-type': 'application/json' }),
        ...(options.cookie ? { cookie: options.cookie } : {}),
        ...options.headers,
      }
      for (const [k, v] of Object.entries(headers)) if (v === '') delete headers[k]
      const request = http.request(new URL(path, base), { method, headers }, (response) => {
        let text = ''
        response.setEncoding('utf8')
        response.on('data', (chunk) => (text += chunk))
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }))
      })
      request.on('error', reject)
      request.end(options.body)
    })
  }
  const json = (answer: Answer) => {
    try {
      return JSON.parse(answer.text) as Record<string, any>
    } catch {
      return {}
    }
  }

  /** A new visitor: the cookie the app mints, and a session of theirs. */
  async function visitor(): Promise<{ cookie: string; sessionId: string }> {
    const listed = await send('GET', '/api/sessions')
    const cookie = String(listed.headers['set-cookie']?.[0] ?? '').split(';')[0]
    if (!cookie) throw new Error(`no identity minted: ${listed.status} ${listed.text}`)
    const created = await send('POST', '/api/sessions', { cookie, body: '{}' })
    if (created.status !== 201) throw new Error(`no session: ${created.status} ${created.text}`)
    return { cookie, sessionId: json(created).session.id }
  }
  const head = async (cookie: string, sessionId: string) =>
    json(await send('GET', `/api/sessions/${sessionId}`, { cookie })).session as { head: number; title: string }
  const sessionCount = async (cookie: string) => (json(await send('GET', '/api/sessions', { cookie })).sessions as unknown[]).length
  const push = (cookie: string, sessionId: string, body: unknown, headers: Record<string, string> = {}) =>
    send('POST', `/api/sessions/${sessionId}/events`, { cookie, body: typeof body === 'string' ? body : JSON.stringify(body), headers })
  let generationsAccepted = 0
  const ask = async (cookie: string, sessionId: string, n: number) => {
    const answer = await push(cookie, sessionId, {
      events: [
        { id: `q${n}`, type: 'message', payload: { text: `question ${n}` } },
        { id: `a${n}`, type: 'generate', payload: { for: `q${n}` } },
      ],
    })
    if (answer.status === 201) generationsAccepted++
    return answer
  }

  /** Sends a request that must be refused with `status` and must not move the session. */
  async function refused(name: string, status: number | number[], who: { cookie: string; sessionId: string }, request: () => Promise<Answer>) {
    const before = await head(who.cookie, who.sessionId)
    const sessions = await sessionCount(who.cookie)
    const answer = await request()
    const after = await head(who.cookie, who.sessionId)
    const statuses = Array.isArray(status) ? status : [status]
    const wrote = after.head !== before.head || after.title !== before.title || (await sessionCount(who.cookie)) !== sessions
    const code = json(answer).error?.code
    check(
      name,
      statuses.includes(answer.status) && !wrote && typeof code === 'string',
      `${answer.status} ${code ?? answer.text.slice(0, 80)}${wrote ? ' — and it wrote' : ''}`,
    )
  }

  // Headers, on a page and on an API answer.
  const page = await send('GET', '/')
  const csp = String(page.headers['content-security-policy'] ?? '')
  check('page: CSP with a script nonce', /script-src [^;]*'nonce-[A-Za-z0-9+/=]+'/.test(csp), csp)
  check("page: CSP img-src 'self' data:", /img-src 'self' data:/.test(csp), csp)
  check("page: CSP frame-ancestors 'none'", csp.includes("frame-ancestors 'none'"), csp)
  for (const answer of [page, await send('GET', '/api/sessions')]) {
    const where = answer === page ? 'page' : 'api'
    check(`${where}: nosniff`, answer.headers['x-content-type-options'] === 'nosniff', String(answer.headers['x-content-type-options']))
    check(`${where}: Referrer-Policy`, Boolean(answer.headers['referrer-policy']), String(answer.headers['referrer-policy']))
    check(
      `${where}: not frameable`,
      answer.headers['x-frame-options'] === 'DENY' && String(answer.headers['content-security-policy']).includes("frame-ancestors 'none'"),
      String(answer.headers['x-frame-options']),
    )
    check(
      `${where}: HSTS`,
      String(answer.headers['strict-transport-security'] ?? '').includes('max-age='),
      String(answer.headers['strict-transport-security']),
    )
  }
  const api = await send('GET', '/api/sessions')
  check('api: Cache-Control no-store', api.headers['cache-control'] === 'no-store', String(api.headers['cache-control']))

  // Operator routes, as a signed-in end user: one run of theirs, one of someone else's.
  const alice = await visitor()
  const mallory = await visitor()
  await ask(alice.cookie, alice.sessionId, 1)
  await ask(mallory.cookie, mallory.sessionId, 1)
  const aliceRuns = json(await send('GET', '/api/runs', { cookie: alice.cookie })).runs as Array<{ id: number; owner?: unknown }>
  const malloryRun = (json(await send('GET', '/api/runs', { cookie: mallory.cookie })).runs as Array<{ id: number }>)[0]
  check(
    'operator: an end user sees only their own runs, without worker ids',
    aliceRuns.length === 1 && !('owner' in aliceRuns[0]),
    JSON.stringify(aliceRuns),
  )
  const operatorRoutes: Array<[string, () => Promise<Answer>]> = [
    ['GET /api/runs?scope=all', () => send('GET', '/api/runs?scope=all', { cookie: alice.cookie })],
    ["GET another user's run", () => send('GET', `/api/runs/${malloryRun.id}`, { cookie: alice.cookie })],
    [
      'settle an effect of my own run',
      () => send('POST', `/api/runs/${aliceRuns[0].id}/effects/model`, { cookie: alice.cookie, body: '{"done":true}' }),
    ],
    [
      "settle an effect of another user's run",
      () => send('POST', `/api/runs/${malloryRun.id}/effects/model`, { cookie: alice.cookie, body: '{"done":true}' }),
    ],
    [
      'settle with a made-up bearer token',
      () =>
        send('POST', `/api/runs/${aliceRuns[0].id}/effects/model`, {
          cookie: alice.cookie,
          body: '{"done":true}',
          headers: { authorization: 'Bearer guess' },
        }),
    ],
    ['sign in as operator with a guess', () => send('POST', '/api/operator', { cookie: alice.cookie, body: '{"token":"guess"}' })],
  ]
  for (const [name, request] of operatorRoutes) {
    const answer = await request()
    check(`operator route as end user: ${name}`, answer.status === 403 || answer.status === 404, `${answer.status} ${answer.text.slice(0, 80)}`)
  }

  // Finding 1: one address, fresh identities, no cookies kept: at most the configured generations a minute.
  const flood: number[] = []
  let retryAfter: string | undefined
  for (let i = 0; i < limits.generationsPerMinutePerAddress + 3; i++) {
    const fresh = await visitor()
    const answer = await ask(fresh.cookie, fresh.sessionId, 1)
    flood.push(answer.status)
    if (answer.status === 429) retryAfter ??= String(answer.headers['retry-after'])
  }
  check(
    `one address starts at most ${limits.generationsPerMinutePerAddress} generations a minute`,
    generationsAccepted === limits.generationsPerMinutePerAddress && flood.at(-1) === 429 && Number(retryAfter) > 0,
    `${generationsAccepted} accepted in all; the flood answered ${flood.join(' ')}; Retry-After ${retryAfter}`,
  )

  // Finding 2: CSRF and cookie tossing.
  const victim = await visitor()
  const message = { type: 'message', payload: { text: 'from another site' } }
  await refused('CSRF: a text/plain form from another origin', [403, 415], victim, () =>
    push(victim.cookie, victim.sessionId, JSON.stringify(message), { 'content-type': 'text/plain', origin: 'http://evil.example' }),
  )
  await refused('CSRF: JSON from another origin', 403, victim, () =>
    push(victim.cookie, victim.sessionId, message, { origin: 'http://evil.example' }),
  )
  await refused('CSRF: Sec-Fetch-Site cross-site', 403, victim, () =>
    push(victim.cookie, victim.sessionId, message, { 'sec-fetch-site': 'cross-site' }),
  )
  await refused('CSRF: no Origin at all', 403, victim, () => push(victim.cookie, victim.sessionId, message, { origin: '' }))
  const attacker = await visitor()
  await refused('cookie tossing: a second a2_uid beside the victim’s is no identity', 401, victim, () =>
    push(`${attacker.cookie}; ${victim.cookie}`, victim.sessionId, message),
  )

  // Finding 3: input that must answer a typed 4xx, never a 500.
  let deep = '"x"'
  for (let i = 0; i < 5_000; i++) deep = `[${deep}]`
  const target = await visitor()
  const inputCases: Array<[string, () => Promise<Answer>]> = [
    ['a lone surrogate', () => push(target.cookie, target.sessionId, '{"type":"message","payload":{"text":"a\\ud800b"}}')],
    ['NUL in a new title', () => send('POST', '/api/sessions', { cookie: target.cookie, body: '{"title":"a\\u0000b"}' })],
    ['NUL in a rename', () => send('PATCH', `/api/sessions/${target.sessionId}`, { cookie: target.cookie, body: '{"title":"a\\u0000b"}' })],
    [
      'the same id twice in one push',
      () =>
        push(target.cookie, target.sessionId, {
          events: [
            { id: 'x', ...message },
            { id: 'x', ...message },
          ],
        }),
    ],
    ['?before=99999999999999999999.x', () => send('GET', '/api/sessions?before=99999999999999999999.x', { cookie: target.cookie })],
    ['?after=2147483648', () => send('GET', `/api/sessions/${target.sessionId}/events?after=2147483648`, { cookie: target.cookie })],
    ['?after=0x10', () => send('GET', `/api/sessions/${target.sessionId}/events?after=0x10`, { cookie: target.cookie })],
    ['5,000 levels of nesting', () => push(target.cookie, target.sessionId, deep)],
    ['a malformed %-encoded cookie', () => push('a2_uid=%E0%A4%A', target.sessionId, message)],
    ['generate.for naming nothing', () => push(target.cookie, target.sessionId, { type: 'generate', payload: { for: 'nothing' } })],
  ]
  for (const [name, request] of inputCases) await refused(`input: ${name}`, [400, 401, 422], target, request)
  const reused = await push(target.cookie, target.sessionId, { id: 'once', ...message })
  await refused('input: a reused id with another payload', 409, target, () =>
    push(target.cookie, target.sessionId, { id: 'once', type: 'message', payload: { text: 'other' } }),
  )
  check('input: the original push of that id landed', reused.status === 201, String(reused.status))
  const malformedList = await send('GET', '/api/sessions', { cookie: 'a2_uid=%' })
  check('input: a malformed cookie is no identity (a new one), not a 500', malformedList.status === 200, String(malformedList.status))
  const fromStart = await firstEventId(base, `/api/sessions/${target.sessionId}/events?after=`, target.cookie)
  check('input: an empty after= reads from the start', fromStart === 0, `first id ${fromStart}`)

  // Finding 4: caps.
  const hoarder = await visitor()
  for (let i = 1; i < limits.maxSessionsPerUser; i++) await send('POST', '/api/sessions', { cookie: hoarder.cookie, body: '{}' })
  await refused('caps: one session more than a user may keep', 422, hoarder, () =>
    send('POST', '/api/sessions', { cookie: hoarder.cookie, body: '{}' }),
  )
  const big = JSON.stringify({ type: 'message', payload: { text: 'x'.repeat(15_000) } })
  for (let pushed = 0; pushed + 15_000 <= limits.maxPushedBytesPerSession; pushed += 15_000) await push(hoarder.cookie, hoarder.sessionId, big)
  await refused('caps: bytes past the session’s limit', 413, hoarder, () => push(hoarder.cookie, hoarder.sessionId, big))
  const tails = await Promise.all(
    Array.from({ length: limits.maxTailsPerUser + 1 }, () => openTail(base, `/api/sessions/${hoarder.sessionId}/events`, hoarder.cookie)),
  )
  const tailStatuses = tails.map((t) => t.status)
  check(
    `caps: at most ${limits.maxTailsPerUser} live tails per user`,
    tailStatuses.filter((s) => s === 200).length === limits.maxTailsPerUser && tailStatuses.includes(429),
    tailStatuses.join(' '),
  )
  for (const t of tails) t.close()
  const started = Date.now()
  const slow = await slowBody(base, `/api/sessions/${hoarder.sessionId}/events`, hoarder.cookie, origin)
  check(
    'caps: a body trickled in is cut off with a 408',
    slow === 408 && Date.now() - started < limits.bodyTimeoutMs + 5_000,
    `${slow} after ${Date.now() - started} ms`,
  )
  return checks
}

/** The first event id an SSE tail sends (or undefined within 3 s). */
function firstEventId(base: string, path: string, cookie: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const request = http.get(new URL(path, base), { headers: { cookie } }, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk) => {
        text += chunk
        const match = /^id: (\d+)$/m.exec(text)
        if (match) {
          resolve(Number(match[1]))
          request.destroy()
        }
      })
    })
    request.on('error', () => resolve(undefined))
    setTimeout(() => {
      resolve(undefined)
      request.destroy()
    }, 3_000)
  })
}

/** Opens an SSE tail and reports its status; `close` hangs up. */
function openTail(base: string, path: string, cookie: string): Promise<{ status: number; close: () => void }> {
  return new Promise((resolve, reject) => {
    const request = http.get(new URL(path, base), { headers: { cookie } }, (response) => {
      response.resume()
      resolve({ status: response.statusCode ?? 0, close: () => request.destroy() })
    })
    request.on('error', reject)
  })
}

/** A push whose body sends one byte and then nothing: the status it ends with. */
function slowBody(base: string, path: string, cookie: string, origin: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      new URL(path, base),
      { method: 'POST', headers: { cookie, origin, 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
      (response) => {
        response.resume()
        resolve(response.statusCode ?? 0)
        request.destroy()
      },
    )
    request.on('error', reject)
    request.write('{')
  })
}

/** The limits from the same variables the app reads (their defaults when unset). */
export function limitsFromEnv(source: Record<string, string | undefined> = process.env): AbuseCheckLimits {
  const n = (name: string, fallback: number) => Number(source[name] || fallback)
  return {
    generationsPerMinutePerAddress: n('A2_RATE_GENERATIONS_PER_MIN_PER_ADDRESS', 30),
    maxSessionsPerUser: n('A2_MAX_SESSIONS_PER_USER', 1_000),
    maxPushedBytesPerSession: n('A2_MAX_PUSHED_BYTES_PER_SESSION', 4 * 1024 * 1024),
    maxTailsPerUser: n('A2_MAX_TAILS_PER_USER', 16),
    bodyTimeoutMs: n('A2_BODY_TIMEOUT_MS', 10_000),
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const base = process.argv[2] ?? 'http://127.0.0.1:3000'
  const checks = await abuseCheck(base, limitsFromEnv())
  for (const c of checks) console.log(`${c.ok ? 'ok  ' : 'FAIL'} ${c.name} — ${c.detail}`)
  const failed = checks.filter((c) => !c.ok).length
  console.log(failed === 0 ? `all ${checks.length} checks passed` : `${failed} of ${checks.length} checks failed`)
  process.exit(failed === 0 ? 0 : 1)
}
