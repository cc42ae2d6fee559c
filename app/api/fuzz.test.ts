/**
 * Fuzzes the HTTP surface with random and hostile requests: every answer is a 2xx or a
 * clear 4xx with a typed JSON error, never a 5xx, and a refused request writes nothing in
 * any table. The generator reaches every class issue 14 found: lone surrogates and NUL in
 * any string, repeated ids in one push, a reused id with other content, 5,000 levels of
 * nesting, numeric edges (2**31, 2**31-1, -1, 1e400, "0x10", "", " 1") in payloads,
 * cursors and run ids, malformed %-encoded cookies, and huge bodies. Bounded: 3,000 cases
 * from a fixed seed (reproducible from the case number), on PGlite.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { loadRoutes } from '@/test/routes'

const CASES = 3_000

/** mulberry32: a tiny seeded PRNG, so a failure reproduces from its case number. */
function prng(seed: number) {
  return () => {
    seed |= 0
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const TYPES = ['message', 'generate', 'cancelled', 'chunk', 'finished', 'note.saved', 'a2.failed', '', 'constructor', '__proto__', 'x'.repeat(100)]
/** Numbers at the edges of int4 and of JSON, and strings that look like numbers. */
const NUMERIC_EDGES: unknown[] = [2 ** 31, 2 ** 31 - 1, -1, -2, 0, Infinity, -0, 2 ** 53 + 1, 0.5, '0x10', '', ' 1', '1e400', '2147483648', '-1']
const CURSOR_EDGES = ['2147483648', '2147483647', '-1', '-2', '1e400', '0x10', '', ' 1', '%201', '1.0', '99999999999999999999', 'NaN', '０', '1,2']
const HOSTILE_STRINGS = ['a\ud800b', '\udc00', 'x\ud83d', 'nul\u0000', '\u0000', '😀\ud800😀', 'ok']
const BAD_COOKIES = ['a2_uid=%E0%A4%A', 'a2_uid=%', 'a2_uid=%ZZ', 'a2_uid=u_x.%C0%AF', 'a2_uid=a; a2_uid=b', 'a2_uid=' + '%'.repeat(50), '=%;=']

/** The classes a run must reach, or it proves nothing about them. */
type HostileClass =
  | 'lone surrogate'
  | 'nul'
  | 'repeated id in one push'
  | 'reused id, other content'
  | 'deep nesting'
  | 'numeric edge'
  | 'cursor edge'
  | 'malformed cookie'
  | 'huge body'
  | 'hostile title'
  | 'run id edge'

function pick<T>(rand: () => number, list: readonly T[]): T {
  return list[Math.floor(rand() * list.length)]
}

function nested(levels: number): string {
  return '['.repeat(levels) + '"x"' + ']'.repeat(levels)
}

function randomValue(rand: () => number, seen: Set<HostileClass>, depth = 0): unknown {
  const r = rand()
  if (depth > 3 || r < 0.1) return Math.floor(rand() * 2 ** 33) - 2 ** 32
  if (r < 0.18) {
    seen.add('numeric edge')
    return pick(rand, NUMERIC_EDGES)
  }
  if (r < 0.3) {
    const s = pick(rand, HOSTILE_STRINGS)
    seen.add(s.includes('\u0000') ? 'nul' : s === 'ok' ? 'numeric edge' : 'lone surrogate')
    return s
  }
  if (r < 0.35) return 'ab"\\\n😀'.repeat(Math.floor(rand() * 5))
  if (r < 0.38) return null
  if (r < 0.42) return rand() < 0.5
  if (r < 0.45) return 'x'.repeat(Math.floor(rand() * 70_000))
  if (r < 0.6) return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(rand, seen, depth + 1))
  const keys = [
    'text',
    'of',
    'for',
    'edits',
    'replaces',
    'lastSeenIndex',
    'delta',
    'attempt',
    'id',
    'type',
    'payload',
    'events',
    '__proto__',
    '\ud800',
  ]
  return Object.fromEntries(Array.from({ length: Math.floor(rand() * 4) }, () => [pick(rand, keys), randomValue(rand, seen, depth + 1)]))
}

/** A push body; `accepted` holds ids (and their events) the log already has, for reuse. */
function randomBody(rand: () => number, seen: Set<HostileClass>, accepted: Array<{ id: string; type: string; payload: unknown }>): string {
  const r = rand()
  if (r < 0.06)
    return ['', '{', '[]', 'null', '"x"', '{"type":', '\u0000', '{}}', 'NaN', '{"type":"message","payload":{"text":"\\ud800"}}'][
      Math.floor(rand() * 10)
    ]
  if (r < 0.1) {
    seen.add('deep nesting')
    const levels = pick(rand, [33, 100, 5_000])
    return rand() < 0.5 ? nested(levels) : `{"type":"message","payload":{"text":"x","deep":${nested(levels)}}}`
  }
  if (r < 0.14) {
    seen.add('repeated id in one push')
    const id = `dup${Math.floor(rand() * 5)}`
    return JSON.stringify({
      events: [
        { id, type: 'message', payload: { text: 'a' } },
        { id, type: 'message', payload: { text: rand() < 0.5 ? 'a' : 'b' } },
      ],
    })
  }
  if (r < 0.2 && accepted.length > 0) {
    seen.add('reused id, other content')
    const original = pick(rand, accepted)
    const altered = rand() < 0.3 ? original.payload : { ...(original.payload as object), text: `changed ${Math.floor(rand() * 1e6)}` }
    return JSON.stringify({ id: original.id, type: rand() < 0.8 ? original.type : 'generate', payload: altered })
  }
  if (r < 0.23) {
    seen.add('huge body')
    return JSON.stringify({ type: 'message', payload: { text: 'x'.repeat(Math.floor(200_000 + rand() * 2_000_000)) } })
  }
  const event = () => {
    const e: Record<string, unknown> = { type: pick(rand, TYPES), payload: randomValue(rand, seen) }
    if (rand() < 0.5) e.id = rand() < 0.8 ? `id${Math.floor(rand() * 1e9)}` : randomValue(rand, seen)
    if (rand() < 0.1) e.extra = randomValue(rand, seen)
    if (e.type === 'message' && rand() < 0.6) e.payload = { text: String(randomValue(rand, seen)).slice(0, 20_000) || 'hi' }
    if (e.type === 'cancelled' && rand() < 0.5) e.payload = { of: 'g', lastSeenIndex: pick(rand, NUMERIC_EDGES) }
    return e
  }
  if (r < 0.4) return JSON.stringify({ events: Array.from({ length: Math.floor(rand() * 25) }, event) })
  return JSON.stringify(rand() < 0.9 ? event() : randomValue(rand, seen))
}

describe('the HTTP surface under fuzzing', () => {
  let routes: Awaited<ReturnType<typeof loadRoutes>>

  beforeAll(async () => {
    routes = await loadRoutes()
  })
  afterAll(async () => {
    await routes.chatServer.shutdownChatServer()
  })

  it(`answers ${CASES} random and hostile requests with 2xx or a typed 4xx, and refused ones write nothing`, async () => {
    const { cookie, sessionId } = await routes.newUser()
    const { server } = await routes.chatServer.getChatServer()
    const rand = prng(20261130)
    const seen = new Set<HostileClass>()
    const statuses = new Map<number, number>()
    const accepted: Array<{ id: string; type: string; payload: unknown }> = []

    /** Every table a request could write, in one statement. */
    const snapshot = async () => {
      const result = (await server.store.db.execute(sql`
        select (select count(*) from a2_sessions)::int as sessions,
               (select count(*) from a2_events)::int as events,
               (select count(*) from a2_jobs)::int as jobs,
               (select coalesce(sum(pushed_bytes), 0) from a2_sessions)::bigint::text as bytes,
               (select string_agg(title, '|' order by id) from a2_sessions) as titles,
               (select count(*) from operator_audit)::int as audit`)) as unknown
      const [row] = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Array<Record<string, unknown>>
      return row
    }

    for (let i = 0; i < CASES; i++) {
      const r = rand()
      let label: string
      let send: () => Promise<Response>
      if (r < 0.7) {
        const body = randomBody(rand, seen, accepted)
        label = `push ${body.slice(0, 160)}`
        send = () => routes.push(sessionId, cookie, body)
      } else if (r < 0.8) {
        seen.add('cursor edge')
        const edge = pick(rand, CURSOR_EDGES)
        // A header can only carry Latin-1 (the client refuses anything else before sending).
        const viaHeader = rand() < 0.4 && /^[\x20-\x7e]*$/.test(edge)
        label = `tail ${viaHeader ? 'Last-Event-ID' : 'after'}=${JSON.stringify(edge)}`
        send = async () => {
          const controller = new AbortController()
          const response = await routes.call('GET', `/api/sessions/${sessionId}/events${viaHeader ? '' : `?after=${encodeURIComponent(edge)}`}`, {
            cookie,
            signal: controller.signal,
            headers: viaHeader ? { 'last-event-id': edge } : {},
          })
          if (response.status === 200) {
            controller.abort()
            return Response.json({ events: [] }, { status: 200 }) // the stream is not the point: its status is
          }
          return response
        }
      } else if (r < 0.87) {
        seen.add('malformed cookie')
        const bad = pick(rand, BAD_COOKIES)
        label = `cookie ${bad}`
        send = () =>
          rand() < 0.5
            ? routes.push(sessionId, bad, JSON.stringify({ type: 'message', payload: { text: 'x' } }))
            : routes.call('GET', `/api/sessions/${sessionId}`, { cookie: bad })
      } else if (r < 0.95) {
        seen.add('hostile title')
        const title = rand() < 0.5 ? pick(rand, HOSTILE_STRINGS) : pick(rand, NUMERIC_EDGES)
        const body = JSON.stringify({ title })
        label = `title ${body}`
        send = () =>
          rand() < 0.5 ? routes.call('POST', '/api/sessions', { cookie, body }) : routes.call('PATCH', `/api/sessions/${sessionId}`, { cookie, body })
      } else {
        seen.add('run id edge')
        const edge = pick(rand, [...CURSOR_EDGES.filter(Boolean), '0', '1', '%ZZ']) // an empty segment is another route (the list)
        label = `run ${edge}`
        send = () => routes.call('GET', `/api/runs/${encodeURIComponent(edge)}`, { cookie })
      }

      const before = await snapshot()
      const response = await send()
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
      const json = (await response.json().catch(() => ({}))) as {
        events?: Array<{ id: string; type: string; payload: unknown }>
        duplicate?: boolean
        error?: { code: string }
      }
      expect(response.status, `case ${i}: ${label}`).toBeLessThan(500)
      const after = await snapshot()
      if (response.status >= 400) {
        expect(json.error?.code, `case ${i}: ${label}`).toMatch(/^[a-z_]+$/)
        expect(after, `case ${i}: a refused request wrote: ${label}`).toEqual(before)
      } else if (label.startsWith('push') && !json.duplicate) {
        expect((after.events as number) - (before.events as number), `case ${i}`).toBe(json.events!.length)
        for (const event of json.events!) if (!event.id.includes('-')) accepted.push(event)
      }
    }
    // The corpus must reach both sides and every hostile class, or it proves nothing.
    expect([...statuses.keys()].some((s) => s < 300)).toBe(true)
    expect([...statuses.keys()].filter((s) => s >= 400).length).toBeGreaterThan(4)
    expect([...seen].sort()).toEqual(
      [
        'lone surrogate',
        'nul',
        'repeated id in one push',
        'reused id, other content',
        'deep nesting',
        'numeric edge',
        'cursor edge',
        'malformed cookie',
        'huge body',
        'hostile title',
        'run id edge',
      ].sort(),
    )
    expect(statuses.get(409), 'reused ids with other content reach the 409').toBeGreaterThan(0)
  }, 300_000)
})
