/**
 * The outbox courier: a page's sender for stored intents (a Stop) whose session has no store
 * open in it — a chat left, or a tab closed, while the server was away.
 */
import { describe, expect, it } from 'vitest'
import { createSessionStore, startOutboxCourier } from '@/lib/a2/react'
import type { A2Event } from '@/lib/a2'

function memoryStorage() {
  const items = new Map<string, string>()
  return {
    items,
    get length() {
      return items.size
    },
    key: (index: number) => [...items.keys()][index] ?? null,
    getItem: (key: string) => items.get(key) ?? null,
    setItem: (key: string, value: string) => void items.set(key, value),
    removeItem: (key: string) => void items.delete(key),
  }
}

const stop = (id: string, session: string): A2Event => ({
  id,
  sessionId: session,
  index: -1,
  type: 'note',
  payload: { v: id },
  createdAt: '2026-01-01T00:00:00.000Z',
})
const keyOf = (session: string) => `a2.outbox:/api/sessions/${session}/events`
/** The intents stored under `key` still to send: an acknowledged one (its log index, not -1) stays for the chat's next page, never sent again. */
const toSend = (storage: { getItem(key: string): string | null }, key: string) =>
  (JSON.parse(storage.getItem(key) ?? '[]') as A2Event[]).filter((e) => e.index < 0).map((e) => e.id)

/** A server answering each push by `answer(url, id)`: 'ok', a status, or 'down' (a network error). */
function fakeServer(answer: (url: string, id: string) => 'ok' | number | 'down') {
  let head = 0
  const sent: Array<{ url: string; id: string; keepalive: boolean }> = []
  const listeners = new Set<() => void>()
  const fn = (async (url: string, init: RequestInit) => {
    const { id } = JSON.parse(String(init.body)) as { id: string }
    sent.push({ url, id, keepalive: init.keepalive === true })
    for (const listener of listeners) listener()
    const verdict = answer(url, id)
    if (verdict === 'down') throw new TypeError('Failed to fetch')
    if (verdict === 'ok')
      return Response.json({ events: [{ ...stop(id, 's'), index: head++, createdAt: new Date().toISOString() }] }, { status: 201 })
    return Response.json({ error: { code: 'refused', message: 'no' } }, { status: verdict })
  }) as unknown as typeof fetch
  return { fn, sent, onSend: (listener: () => void) => (listeners.add(listener), () => void listeners.delete(listener)) }
}

/** Resolves once `check` holds, looked at on every send and every 5 ms; rejects naming `what` after 5 s. */
function until(check: () => boolean, what: string, on: (listener: () => void) => () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const look = () => {
      if (!check()) return
      done()
      resolve()
    }
    const poll = setInterval(look, 5)
    const stopListening = on(look)
    const timer = setTimeout(() => (done(), reject(new Error(`timed out waiting for ${what}`))), 5_000)
    const done = () => {
      clearInterval(poll)
      clearTimeout(timer)
      stopListening()
    }
    look()
  })
}

describe('the outbox courier', () => {
  it('sends every stored intent of a session no store here has open, keepalive, and marks each acknowledged: kept for its chat, never sent again', async () => {
    const storage = memoryStorage()
    storage.setItem(keyOf('a'), JSON.stringify([stop('stop-a1', 'a'), stop('stop-a2', 'a')]))
    storage.setItem(keyOf('b'), JSON.stringify([stop('stop-b', 'b')]))
    storage.setItem('unrelated', 'kept')
    const server = fakeServer(() => 'ok')
    const halt = startOutboxCourier({ fetch: server.fn, storage })
    await until(
      () => server.sent.length === 3 && toSend(storage, keyOf('b')).length === 0 && toSend(storage, keyOf('a')).length === 0,
      'three sends',
      server.onSend,
    )
    halt()
    expect(server.sent).toEqual([
      { url: '/api/sessions/a/events', id: 'stop-a1', keepalive: true },
      { url: '/api/sessions/a/events', id: 'stop-a2', keepalive: true },
      { url: '/api/sessions/b/events', id: 'stop-b', keepalive: true },
    ])
    expect([...storage.items.keys()]).toEqual([keyOf('a'), keyOf('b'), 'unrelated'])
    expect(JSON.parse(storage.getItem(keyOf('a'))!)).toMatchObject([
      { id: 'stop-a1', index: 0 },
      { id: 'stop-a2', index: 1 },
    ])
    // The next page's courier sends nothing of it again.
    // A Stop stored later under another key: the round reaches it after the kept ones.
    storage.setItem(keyOf('c'), JSON.stringify([stop('stop-c', 'c')]))
    const next = startOutboxCourier({ fetch: server.fn, storage })
    await until(() => server.sent.length === 4, 'the later Stop sent', server.onSend)
    next()
    expect(server.sent.slice(3).map((s) => s.id)).toEqual(['stop-c'])
  })

  it('drops an acknowledged intent no page of its chat let go within a day of its press', async () => {
    const storage = memoryStorage()
    const recent = { ...stop('stop-recent', 'r'), index: 4, createdAt: new Date().toISOString() }
    const old = { ...stop('stop-old', 'o'), index: 9, createdAt: new Date(Date.now() - 25 * 3_600_000).toISOString() }
    storage.setItem(keyOf('r'), JSON.stringify([recent]))
    storage.setItem(keyOf('o'), JSON.stringify([old]))
    const server = fakeServer(() => 'ok')
    const halt = startOutboxCourier({ fetch: server.fn, storage })
    await until(() => !storage.items.has(keyOf('o')), 'the day-old one dropped', server.onSend)
    halt()
    expect(storage.getItem(keyOf('r'))).toBe(JSON.stringify([recent]))
    expect(server.sent).toEqual([])
  })

  it('retries while the server is away, drops a final refusal, and leaves a session whose store is open to that store', async () => {
    const storage = memoryStorage()
    storage.setItem(keyOf('away'), JSON.stringify([stop('stop-away', 'away')]))
    storage.setItem(keyOf('gone'), JSON.stringify([stop('stop-gone', 'gone')]))
    storage.setItem(keyOf('open'), JSON.stringify([stop('stop-open', 'open')]))
    let up = false
    const server = fakeServer((url) => (url.includes('/gone/') ? 404 : url.includes('/open/') ? 'ok' : up ? 'ok' : 'down'))
    // The chat of session `open` is on screen: its store delivers its outbox (it never answers here).
    const open = createSessionStore<string[]>({
      sessionId: 'open',
      reducer: (s) => s,
      initial: [],
      fetch: (() => new Promise(() => {})) as unknown as typeof fetch,
      durableTypes: ['note'],
      storage,
    })
    open.connect()
    const halt = startOutboxCourier({ fetch: server.fn, storage, retryDelaysMs: [1] })
    await until(() => server.sent.filter((s) => s.id === 'stop-away').length >= 3, 'three sends while away', server.onSend)
    expect(storage.items.has(keyOf('gone'))).toBe(false) // refused for good (404): dropped
    expect(storage.items.has(keyOf('away'))).toBe(true)
    up = true
    await until(() => toSend(storage, keyOf('away')).length === 0, 'the send once back', server.onSend)
    expect(server.sent.filter((s) => s.id === 'stop-gone')).toHaveLength(1)
    expect(server.sent.some((s) => s.id === 'stop-open')).toBe(false)
    expect(storage.items.has(keyOf('open'))).toBe(true)

    // The chat is left: what its store had not delivered is the courier's at once.
    open.close()
    await until(() => toSend(storage, keyOf('open')).length === 0, 'the open chat’s Stop, once it was closed', server.onSend)
    expect(server.sent.filter((s) => s.id === 'stop-open')).toHaveLength(1)
    halt()
  })

  it('sends only to paths of this origin', async () => {
    const storage = memoryStorage()
    storage.setItem('a2.outbox://evil.example/api/sessions/x/events', JSON.stringify([stop('x1', 'x')]))
    storage.setItem('a2.outbox:https://evil.example/api/sessions/x/events', JSON.stringify([stop('x2', 'x')]))
    storage.setItem(keyOf('ok'), JSON.stringify([stop('ok1', 'ok')]))
    const server = fakeServer(() => 'ok')
    const halt = startOutboxCourier({ fetch: server.fn, storage })
    await until(() => toSend(storage, keyOf('ok')).length === 0, 'the same-origin send', server.onSend)
    halt()
    expect(server.sent.map((s) => s.id)).toEqual(['ok1'])
  })

  it('holds a Stop refused invalid_reference (the answer it names is still on its way) for a bounded time from its press, then drops it', async () => {
    const storage = memoryStorage()
    const fresh = { ...stop('stop-fresh', 'f'), createdAt: new Date().toISOString() }
    const stale = { ...stop('stop-stale', 's'), createdAt: new Date(Date.now() - 61_000).toISOString() }
    storage.setItem(keyOf('f'), JSON.stringify([fresh]))
    storage.setItem(keyOf('s'), JSON.stringify([stale]))
    const sent: string[] = []
    const fn = (async (_url: string, init: RequestInit) => {
      const { id } = JSON.parse(String(init.body)) as { id: string }
      sent.push(id)
      // The answer `stop-fresh` names lands after its third send.
      if (id === 'stop-stale' || sent.filter((s) => s === id).length <= 3) {
        return Response.json({ error: { code: 'invalid_reference', message: 'cancelled.of must name an answer in this chat' } }, { status: 422 })
      }
      return Response.json({ events: [{ ...fresh, index: 1 }] }, { status: 201 })
    }) as unknown as typeof fetch
    const halt = startOutboxCourier({ fetch: fn, storage, retryDelaysMs: [1] })
    await until(
      () => toSend(storage, keyOf('f')).length === 0 && !storage.items.has(keyOf('s')),
      'the fresh one acknowledged, the stale one dropped',
      () => () => {},
    )
    halt()
    expect(sent.filter((id) => id === 'stop-fresh')).toHaveLength(4) // held while refused, then acknowledged
    expect(sent.filter((id) => id === 'stop-stale')).toHaveLength(1) // pressed over a minute ago: final
  })
  it('keeps a Stop refused not_found (a chat of another identity of this browser) for a later page, sent once a page, until its own identity takes it', async () => {
    const storage = memoryStorage()
    // Account A pressed Stop in chat `a` while offline, then this browser signed into account B.
    const pressed = { ...stop('stop-of-a', 'a'), createdAt: new Date().toISOString() }
    const old = { ...stop('stop-old', 'old'), createdAt: new Date(Date.now() - 25 * 3_600_000).toISOString() }
    storage.setItem(keyOf('a'), JSON.stringify([pressed]))
    storage.setItem(keyOf('old'), JSON.stringify([old]))
    let signedIn: 'A' | 'B' = 'B'
    const owners: Record<string, 'A' | 'B'> = { a: 'A', old: 'A', b: 'B' }
    const applied: Array<{ session: string; id: string; as: string }> = []
    const sent: string[] = []
    const listeners = new Set<() => void>()
    const onSend = (listener: () => void) => (listeners.add(listener), () => void listeners.delete(listener))
    // The server's rule: a push to a chat that is not the signed-in identity's is a 404 not_found, with nothing written.
    const fn = (async (url: string, init: RequestInit) => {
      const { id } = JSON.parse(String(init.body)) as { id: string }
      const session = /\/sessions\/([^/]+)\//.exec(url)![1]
      sent.push(id)
      for (const listener of listeners) listener()
      if (owners[session] !== signedIn) return Response.json({ error: { code: 'not_found', message: 'no such session' } }, { status: 404 })
      applied.push({ session, id, as: signedIn })
      return Response.json({ events: [{ ...pressed, id, index: 3 }] }, { status: 201 })
    }) as unknown as typeof fetch

    // B's page: A's Stop is refused and kept; B's own Stop, stored later, is delivered, and A's is not sent again meanwhile.
    const asB = startOutboxCourier({ fetch: fn, storage, retryDelaysMs: [1] })
    await until(() => sent.includes('stop-of-a') && sent.includes('stop-old'), 'the first sends', onSend)
    storage.setItem(keyOf('b'), JSON.stringify([{ ...stop('stop-of-b', 'b'), createdAt: new Date().toISOString() }]))
    asB() // a page of B's loads next (a reload, a second tab): it sends A's once more, and B's
    const nextOfB = startOutboxCourier({ fetch: fn, storage, retryDelaysMs: [1] })
    await until(() => toSend(storage, keyOf('b')).length === 0, 'B’s own Stop delivered', onSend)
    nextOfB()
    expect(sent.filter((id) => id === 'stop-of-a')).toHaveLength(2) // once a page, not every retry round
    expect(storage.items.has(keyOf('a'))).toBe(true)
    expect(storage.items.has(keyOf('old'))).toBe(false) // pressed over a day ago: its answer is long over, dropped
    expect(applied).toEqual([{ session: 'b', id: 'stop-of-b', as: 'B' }])

    // A signs in again on this browser: the page that loads delivers A's Stop to A's chat.
    signedIn = 'A'
    const asA = startOutboxCourier({ fetch: fn, storage, retryDelaysMs: [1] })
    await until(() => toSend(storage, keyOf('a')).length === 0, 'A’s Stop delivered under A', onSend)
    asA()
    expect(applied).toEqual([
      { session: 'b', id: 'stop-of-b', as: 'B' },
      { session: 'a', id: 'stop-of-a', as: 'A' },
    ])
  })
  it('an open chat’s store keeps its Stop refused not_found in storage too (shown no more), for a page of the identity it was pressed as', async () => {
    const storage = memoryStorage()
    const fn = (async () => Response.json({ error: { code: 'not_found', message: 'no such session' } }, { status: 404 })) as unknown as typeof fetch
    const store = createSessionStore<string[]>({ sessionId: 'a', reducer: (s) => s, initial: [], fetch: fn, durableTypes: ['note'], storage })
    store.connect()
    const refused = store.push({ type: 'note', payload: { v: 1 } }).catch((error: { code: string }) => error.code)
    expect(await refused).toBe('not_found')
    expect(store.getSnapshot().pending).toEqual([])
    expect(JSON.parse(storage.getItem(keyOf('a')) ?? '[]')).toHaveLength(1)
    store.close()
  })
})
