/**
 * The sidebar's store without React: delete with undo (hidden at once, sent after the
 * window, put back on undo or on failure), a fetched list never brings a deleted chat back,
 * and pending deletes are flushed when the page goes away.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'

type Store = typeof import('./sessions-store')
const session = (id: string, title = id) => ({ id, title, createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z' })

let calls: Array<{ url: string; method: string; keepalive?: boolean }>
let deleteStatus = 204
let listed = [session('a'), session('b'), session('c')]

async function freshStore(): Promise<Store> {
  vi.resetModules()
  const store = await import('./sessions-store')
  await store.sessionsStore.load()
  return store
}

beforeEach(() => {
  vi.useFakeTimers()
  calls = []
  deleteStatus = 204
  listed = [session('a'), session('b'), session('c')]
  vi.stubGlobal('fetch', async (url: string, init: RequestInit = {}) => {
    const method = init.method ?? 'GET'
    calls.push({ url, method, keepalive: init.keepalive })
    if (method === 'DELETE') {
      return deleteStatus === 204
        ? new Response(null, { status: 204 })
        : Response.json({ error: { code: 'internal', message: 'boom' } }, { status: deleteStatus })
    }
    return Response.json({ sessions: listed })
  })
})
afterEach(() => {
  vi.useRealTimers()
  vi.unstubAllGlobals()
})

const ids = (store: Store) => store.sessionsStore.getSnapshot().sessions.map((s) => s.id)
const deletes = () => calls.filter((c) => c.method === 'DELETE').map((c) => c.url)

describe('delete with undo', () => {
  it('hides the chat at once and sends the delete only when the undo window ends', async () => {
    const store = await freshStore()
    store.sessionsStore.remove('b')
    expect(ids(store)).toEqual(['a', 'c'])
    expect(store.sessionsStore.getSnapshot().pendingDelete).toEqual({ id: 'b', title: 'b', wasOpen: false })
    await vi.advanceTimersByTimeAsync(store.UNDO_MS - 1)
    expect(deletes()).toEqual([])
    await vi.advanceTimersByTimeAsync(1)
    expect(deletes()).toEqual(['/api/sessions/b'])
    expect(store.sessionsStore.getSnapshot().pendingDelete).toBeUndefined()
    expect(ids(store)).toEqual(['a', 'c'])
  })

  it('undo puts the chat back where it was, and nothing is sent', async () => {
    const store = await freshStore()
    store.sessionsStore.remove('b')
    expect(store.sessionsStore.undo('b')).toBe(true)
    expect(ids(store)).toEqual(['a', 'b', 'c'])
    expect(store.sessionsStore.getSnapshot().pendingDelete).toBeUndefined()
    await vi.advanceTimersByTimeAsync(store.UNDO_MS * 2)
    expect(deletes()).toEqual([])
    expect(store.sessionsStore.undo('b')).toBe(false)
  })

  it('a list fetched during or after the window does not bring the deleted chat back', async () => {
    const store = await freshStore()
    store.sessionsStore.remove('b')
    await store.sessionsStore.refresh()
    expect(ids(store)).toEqual(['a', 'c'])
    await vi.advanceTimersByTimeAsync(store.UNDO_MS)
    await store.sessionsStore.refresh()
    expect(ids(store)).toEqual(['a', 'c'])
  })

  it('a failed delete puts the chat back and says so', async () => {
    const store = await freshStore()
    deleteStatus = 500
    store.sessionsStore.remove('b')
    await vi.advanceTimersByTimeAsync(store.UNDO_MS)
    expect(ids(store)).toEqual(['a', 'b', 'c'])
    expect(store.sessionsStore.getSnapshot().error).toMatch(/Couldn’t delete “b”/)
  })

  it('a newer delete ends the previous one’s window: one toast at a time', async () => {
    const store = await freshStore()
    store.sessionsStore.remove('a')
    store.sessionsStore.remove('c')
    await vi.advanceTimersByTimeAsync(0)
    expect(deletes()).toEqual(['/api/sessions/a'])
    expect(store.sessionsStore.getSnapshot().pendingDelete?.id).toBe('c')
    expect(ids(store)).toEqual(['b'])
  })

  it('the page going away sends pending deletes with keepalive', async () => {
    const store = await freshStore()
    store.sessionsStore.remove('a')
    store.sessionsStore.flushDeletes()
    await vi.advanceTimersByTimeAsync(0)
    expect(calls.filter((c) => c.method === 'DELETE')).toEqual([{ url: '/api/sessions/a', method: 'DELETE', keepalive: true }])
    await vi.advanceTimersByTimeAsync(store.UNDO_MS)
    expect(deletes()).toHaveLength(1)
  })

  it('a chat opened by link is "not found" only when the server says so, not when it asks to wait', async () => {
    const store = await freshStore()
    const answers = [
      Response.json({ error: { code: 'rate_limited', message: 'slow down' } }, { status: 429, headers: { 'retry-after': '1' } }),
      Response.json({ session: session('old', 'An old chat') }),
    ]
    const old = '0a5e2c1e-7f3b-4c2d-9a6e-1b2c3d4e5f60'
    vi.stubGlobal('fetch', async (url: string) => (url === `/api/sessions/${old}` ? answers.shift()! : Response.json({ sessions: listed })))
    await store.sessionsStore.ensure(old)
    expect(store.sessionsStore.getSnapshot().missing).toEqual([])
    await store.sessionsStore.ensure(old) // the next visit asks again
    expect(store.sessionsStore.getSnapshot().opened[old]?.title).toBe('An old chat')

    vi.stubGlobal('fetch', async () => Response.json({ error: { code: 'not_found', message: 'no such chat' } }, { status: 404 }))
    const gone = '1b6f3d2f-8a4c-4d3e-8b7f-2c3d4e5f6071'
    await store.sessionsStore.ensure(gone)
    expect(store.sessionsStore.getSnapshot().missing).toEqual([gone])
  })
})

describe('a fresh browser has no identity until its first list answers', () => {
  /**
   * The list, search and create each mint an identity for a request with no cookie, and the
   * last Set-Cookie wins: a chat created under one identity while a second request was minting
   * another was lost to the browser ("Chat not found"). So nothing that may mint is sent while
   * the first list is out.
   */
  it('sends no other list, search or create until the first list has answered', async () => {
    vi.resetModules()
    const store = await import('./sessions-store')
    const inFlight: string[] = []
    let most = 0
    const pending: Array<() => void> = []
    vi.stubGlobal('fetch', (url: string, init: RequestInit = {}) => {
      const request = `${init.method ?? 'GET'} ${url}`
      inFlight.push(request)
      most = Math.max(most, inFlight.length)
      return new Promise<Response>((resolve) =>
        pending.push(() => {
          inFlight.splice(inFlight.indexOf(request), 1)
          resolve(init.method === 'POST' ? Response.json({ session: session('new') }, { status: 201 }) : Response.json({ sessions: listed }))
        }),
      )
    })
    const answerAll = async () => {
      while (pending.length > 0) {
        pending.shift()!()
        await vi.advanceTimersByTimeAsync(0)
      }
    }
    void store.sessionsStore.load()
    const refreshed = store.sessionsStore.refresh() // the tab became visible
    const found = store.sessionsStore.search('hello')
    const created = store.sessionsStore.create()
    await vi.advanceTimersByTimeAsync(0)
    expect(inFlight).toEqual(['GET /api/sessions'])
    await answerAll()
    await Promise.all([refreshed, found, created])
    expect(most).toBeGreaterThan(1) // after the first answer, the rest go out together
    expect(inFlight).toEqual([])
  })
})
