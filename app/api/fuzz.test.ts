/**
 * Fuzzes the push route with random and malformed bodies: every answer is a 2xx or a
 * clear 4xx with a typed JSON error, never a 5xx, and a rejected request appends nothing.
 * Bounded: 3,000 cases from a fixed seed (reproducible), on PGlite.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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

function randomValue(rand: () => number, depth = 0): unknown {
  const r = rand()
  if (depth > 3 || r < 0.15) return Math.floor(rand() * 2 ** 33) - 2 ** 32
  if (r < 0.3) return 'ab\u0000"\\\n😀'.repeat(Math.floor(rand() * 5))
  if (r < 0.35) return null
  if (r < 0.4) return rand() < 0.5
  if (r < 0.45) return 'x'.repeat(Math.floor(rand() * 70_000))
  if (r < 0.6) return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(rand, depth + 1))
  const keys = ['text', 'of', 'for', 'edits', 'replaces', 'lastSeenIndex', 'delta', 'attempt', 'id', 'type', 'payload', 'events', '__proto__']
  return Object.fromEntries(
    Array.from({ length: Math.floor(rand() * 4) }, () => [keys[Math.floor(rand() * keys.length)], randomValue(rand, depth + 1)]),
  )
}

function randomBody(rand: () => number): string {
  const r = rand()
  if (r < 0.1) return ['', '{', '[]', 'null', '"x"', '{"type":', '\u0000', '{}}', 'NaN'][Math.floor(rand() * 9)]
  const event = () => {
    const e: Record<string, unknown> = { type: TYPES[Math.floor(rand() * TYPES.length)], payload: randomValue(rand) }
    if (rand() < 0.3) e.id = rand() < 0.5 ? `id${Math.floor(rand() * 50)}` : randomValue(rand)
    if (rand() < 0.1) e.extra = randomValue(rand)
    if (e.type === 'message' && rand() < 0.5) e.payload = { text: String(randomValue(rand)).slice(0, 20_000) }
    if (e.type === 'cancelled' && rand() < 0.5) e.payload = { of: 'g', lastSeenIndex: Math.floor(rand() * 10) - 2 }
    return e
  }
  if (r < 0.3) return JSON.stringify({ events: Array.from({ length: Math.floor(rand() * 25) }, event) })
  return JSON.stringify(rand() < 0.9 ? event() : randomValue(rand))
}

describe('the push route under fuzzing', () => {
  let routes: Awaited<ReturnType<typeof loadRoutes>>

  beforeAll(async () => {
    routes = await loadRoutes({ env: { A2_RATE_PUSHES_PER_MIN: '1000000', A2_RATE_GENERATIONS_PER_MIN: '1000000' } })
  })
  afterAll(async () => {
    await routes.chatServer.shutdownChatServer()
  })

  it(`answers ${CASES} random bodies with 2xx or a typed 4xx, and rejected ones write nothing`, async () => {
    const { cookie, userId, sessionId } = await routes.newUser()
    const { server } = await routes.chatServer.getChatServer()
    const rand = prng(20261130)
    let head = 0
    const statuses = new Map<number, number>()
    for (let i = 0; i < CASES; i++) {
      const body = randomBody(rand)
      const response = await routes.push(sessionId, cookie, body)
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
      const json = (await response.json()) as { events?: unknown[]; duplicate?: boolean; error?: { code: string; message: string } }
      expect(response.status, `case ${i}: ${body.slice(0, 200)}`).toBeLessThan(500)
      const after = (await server.read(sessionId, userId, { after: head - 1, limit: 100 })).length
      if (response.status >= 400) {
        expect(json.error?.code, `case ${i}`).toMatch(/^[a-z_]+$/)
        expect(after, `case ${i}: a rejected push wrote`).toBe(0)
      } else if (!json.duplicate) {
        expect(after).toBe(json.events!.length)
        head += json.events!.length
      }
    }
    // The corpus must reach both sides, or it proves nothing.
    expect([...statuses.keys()].some((s) => s < 300)).toBe(true)
    expect([...statuses.keys()].filter((s) => s >= 400).length).toBeGreaterThan(2)
  }, 120_000)
})
