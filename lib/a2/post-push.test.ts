/**
 * A durable push (a Stop) answered by something that is not the app: a captive portal's page,
 * an SSO proxy's login page reached through a redirect, a proxy's own 4xx page, JSON that does
 * not acknowledge the pushed id. None of them is the app's acknowledgement, so none may end
 * the intent: it stays in the outbox and is sent again until the app itself answers. Through a
 * real local HTTP server and the real fetch, redirects and all.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createSessionStore } from '@/lib/a2/react'
import type { A2Event } from '@/lib/a2'

type Answer = (request: IncomingMessage, response: ServerResponse, body: { id: string }) => void

const portal: Answer = (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' })
  res.end('<html><body>Accept the terms to use this Wi-Fi</body></html>')
}
const toLogin: Answer = (_req, res) => {
  res.writeHead(302, { location: '/login' })
  res.end()
}
const proxyRefusal: Answer = (_req, res) => {
  res.writeHead(403, { 'content-type': 'text/html' })
  res.end('<html>Forbidden by the proxy</html>')
}
const someoneElsesJson: Answer = (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ events: [] }))
}
const theApp: Answer = (_req, res, body) => {
  const event: A2Event = { id: body.id, sessionId: 's', index: 0, type: 'note', payload: { v: 'stop' }, createdAt: '2026-01-01T00:00:00.000Z' }
  res.writeHead(201, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ events: [event], duplicate: false }))
}

let server: Server | undefined
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  server = undefined
})

/** Answers the n-th push with answers[n] (the last repeats); GET /login is an SSO page (200 HTML). */
async function listen(answers: Answer[]): Promise<{ base: string; pushes: string[] }> {
  const pushes: string[] = []
  server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/login') {
      res.writeHead(200, { 'content-type': 'text/html' })
      return void res.end('<html><form>Sign in</form></html>')
    }
    let raw = ''
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()))
    req.on('end', () => {
      const body = JSON.parse(raw) as { id: string }
      pushes.push(body.id)
      answers[Math.min(pushes.length - 1, answers.length - 1)](req, res, body)
    })
  })
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  return { base: `http://127.0.0.1:${(server!.address() as AddressInfo).port}/api`, pushes }
}

function memoryStorage() {
  const items = new Map<string, string>()
  return {
    items,
    getItem: (k: string) => items.get(k) ?? null,
    setItem: (k: string, v: string) => void items.set(k, v),
    removeItem: (k: string) => void items.delete(k),
  }
}

describe('a durable push answered by something that is not the app', () => {
  it.each([
    ['a captive portal (200 HTML)', portal],
    ['an SSO page through a redirect (302 → 200 HTML)', toLogin],
    ["a proxy's own 403 page", proxyRefusal],
    ['JSON that does not acknowledge the pushed id', someoneElsesJson],
  ])('%s keeps the Stop in the outbox; the app’s own answer ends it', async (_name, notTheApp) => {
    const { base, pushes } = await listen([notTheApp, notTheApp, theApp])
    const storage = memoryStorage()
    const store = createSessionStore<string[]>({
      sessionId: 's',
      reducer: (state, event) => [...state, `${event.type}:${(event.payload as { v: string }).v}`],
      initial: [],
      base,
      retryDelaysMs: [1],
      durableTypes: ['note'],
      storage,
    })
    const acknowledged = await store.push({ id: 'stop-1', type: 'note', payload: { v: 'stop' } })
    expect(acknowledged.map((e) => e.id)).toEqual(['stop-1'])
    expect(pushes).toEqual(['stop-1', 'stop-1', 'stop-1'])
    expect(store.getSnapshot()).toMatchObject({ outbox: [], error: undefined, state: ['note:stop'] })
    // Nothing left to send: kept only as the log's event, for a page of the chat rendered before it landed.
    expect([...storage.items.values()].flatMap((v) => JSON.parse(v) as Array<{ id: string; index: number }>)).toMatchObject([
      { id: 'stop-1', index: 0 },
    ])
  })

  it("still drops one on the app's own typed refusal (a 4xx with its error body)", async () => {
    const { base, pushes } = await listen([
      (_req, res) => {
        res.writeHead(400, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { code: 'invalid_payload', message: 'bad' } }))
      },
    ])
    const store = createSessionStore<string[]>({
      sessionId: 's',
      reducer: (s) => s,
      initial: [],
      base,
      retryDelaysMs: [1],
      durableTypes: ['note'],
      storage: memoryStorage(),
    })
    await expect(store.push({ id: 'stop-1', type: 'note', payload: { v: 'x' } })).rejects.toMatchObject({ status: 400, code: 'invalid_payload' })
    expect(pushes).toEqual(['stop-1'])
    expect(store.getSnapshot().outbox).toEqual([])
  })
})
