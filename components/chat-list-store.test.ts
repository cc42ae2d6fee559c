/**
 * The sidebar's store without React: delete with undo (hidden at once, sent after the
 * window, put back on undo or on failure), a fetched list never brings a deleted chat back,
 * and pending deletes are flushed when the page goes away; what one tab changes in the list
 * shows in the browser's other tabs at once.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'

type Store = typeof import('./chat-list-store')
const session = (id: string, title = id) => ({ id, title, createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z' })

let calls: Array<{ url: string; method: string; keepalive?: boolean }>
let deleteStatus = 204
let listed = [session('a'), session('b'), session('c')]

async function freshStore(): Promise<Store> {
  vi.resetModules()
  const store = await import('./chat-list-store')
  await store.chatListStore.load()
  return store
}

/**
 * BroadcastChannel between the store instances of one test (each freshStore is a tab), as a
 * browser delivers it: to every other instance of the same name, never to the sender, a task later.
 */
class FakeChannel {
  static open = new Set<FakeChannel>()
  private listeners = new Set<(event: { data: unknown }) => void>()
  constructor(readonly name: string) {
    FakeChannel.open.add(this)
  }
  postMessage(data: unknown) {
    for (const other of FakeChannel.open) {
      if (other === this || other.name !== this.name) continue
      const copy = structuredClone(data)
      setTimeout(() => other.listeners.forEach((listener) => listener({ data: copy })), 0)
    }
  }
  addEventListener(_type: 'message', listener: (event: { data: unknown }) => void) {
    this.listeners.add(listener)
  }
  removeEventListener(_type: 'message', listener: (event: { data: unknown }) => void) {
    this.listeners.delete(listener)
  }
}

beforeEach(() => {
  vi.useFakeTimers()
  FakeChannel.open = new Set()
  vi.stubGlobal('BroadcastChannel', FakeChannel)
  calls = []
  deleteStatus = 204
  listed = [session('a'), session('b'), session('c')]
  vi.stubGlobal('fetch', async (url: string, init: RequestInit = {}) => {
    const method = init.method ?? 'GET'
    calls.push({ url, method, keepalive: init.keepalive })
    if (method === 'DELETE') {
      return deleteStatus === 204
        ? new Response(null, { status: 204 })
        : deleteStatus === 409
          ? Response.json({ error: { code: 'unresolved', message: 'This chat has a call that may or may not have happened.' } }, { status: 409 })
          : Response.json({ error: { code: 'internal', message: 'boom' } }, { status: deleteStatus })
    }
    return Response.json({ sessions: listed })
  })
})
afterEach(() => {
  vi.useRealTimers()
  vi.unstubAllGlobals()
})

const ids = (store: Store) => store.chatListStore.getSnapshot().sessions.map((s) => s.id)
const deletes = () => calls.filter((c) => c.method === 'DELETE').map((c) => c.url)

describe('delete with undo', () => {
  it('hides the chat at once and sends the delete only when the undo window ends', async () => {
    const store = await freshStore()
    store.chatListStore.remove('b')
    expect(ids(store)).toEqual(['a', 'c'])
    expect(store.chatListStore.getSnapshot().pendingDelete).toEqual({ id: 'b', title: 'b', wasOpen: false })
    await vi.advanceTimersByTimeAsync(store.UNDO_MS - 1)
    expect(deletes()).toEqual([])
    await vi.advanceTimersByTimeAsync(1)
    expect(deletes()).toEqual(['/api/sessions/b'])
    expect(store.chatListStore.getSnapshot().pendingDelete).toBeUndefined()
    expect(ids(store)).toEqual(['a', 'c'])
  })

  it('undo puts the chat back where it was, and nothing is sent', async () => {
    const store = await freshStore()
    store.chatListStore.remove('b')
    expect(store.chatListStore.undo('b')).toBe(true)
    expect(ids(store)).toEqual(['a', 'b', 'c'])
    expect(store.chatListStore.getSnapshot().pendingDelete).toBeUndefined()
    await vi.advanceTimersByTimeAsync(store.UNDO_MS * 2)
    expect(deletes()).toEqual([])
    expect(store.chatListStore.undo('b')).toBe(false)
  })

  it('a list fetched during or after the window does not bring the deleted chat back', async () => {
    const store = await freshStore()
    store.chatListStore.remove('b')
    await store.chatListStore.refresh()
    expect(ids(store)).toEqual(['a', 'c'])
    await vi.advanceTimersByTimeAsync(store.UNDO_MS)
    await store.chatListStore.refresh()
    expect(ids(store)).toEqual(['a', 'c'])
  })

  it('a failed delete puts the chat back and says so', async () => {
    const store = await freshStore()
    deleteStatus = 500
    store.chatListStore.remove('b')
    await vi.advanceTimersByTimeAsync(store.UNDO_MS)
    expect(ids(store)).toEqual(['a', 'b', 'c'])
    expect(store.chatListStore.getSnapshot().error).toMatch(/Couldn’t delete “b”/)
  })

  it('a chat the list marks unresolved is not hidden and offers no undo: it says it can be deleted once its call is settled, and sends nothing', async () => {
    listed = [session('a'), { ...session('b'), unresolved: true } as ReturnType<typeof session>, session('c')]
    const store = await freshStore()
    store.chatListStore.remove('b')
    const snapshot = store.chatListStore.getSnapshot()
    expect(ids(store)).toEqual(['a', 'b', 'c'])
    expect(snapshot.pendingDelete).toBeUndefined()
    expect(snapshot.error).toMatch(/“b” can’t be deleted until .*settled/)
    await vi.advanceTimersByTimeAsync(store.UNDO_MS)
    expect(deletes()).toEqual([])
  })

  it('a delete the server refuses as unresolved puts the chat back, says why, and a second try is refused at once', async () => {
    const store = await freshStore()
    deleteStatus = 409
    store.chatListStore.remove('b')
    await vi.advanceTimersByTimeAsync(store.UNDO_MS)
    expect(ids(store)).toEqual(['a', 'b', 'c'])
    expect(store.chatListStore.getSnapshot().error).toMatch(/“b” can’t be deleted until .*settled/)
    store.chatListStore.remove('b')
    expect(store.chatListStore.getSnapshot().pendingDelete).toBeUndefined()
    await vi.advanceTimersByTimeAsync(store.UNDO_MS)
    expect(deletes()).toEqual(['/api/sessions/b'])
  })

  it('a newer delete ends the previous one’s window: one toast at a time', async () => {
    const store = await freshStore()
    store.chatListStore.remove('a')
    store.chatListStore.remove('c')
    await vi.advanceTimersByTimeAsync(0)
    expect(deletes()).toEqual(['/api/sessions/a'])
    expect(store.chatListStore.getSnapshot().pendingDelete?.id).toBe('c')
    expect(ids(store)).toEqual(['b'])
  })

  it('the page going away sends pending deletes with keepalive', async () => {
    const store = await freshStore()
    store.chatListStore.remove('a')
    store.chatListStore.flushDeletes()
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
    await store.chatListStore.ensure(old)
    expect(store.chatListStore.getSnapshot().missing).toEqual([])
    await store.chatListStore.ensure(old) // the next visit asks again
    expect(store.chatListStore.getSnapshot().opened[old]?.title).toBe('An old chat')

    vi.stubGlobal('fetch', async () => Response.json({ error: { code: 'not_found', message: 'no such chat' } }, { status: 404 }))
    const gone = '1b6f3d2f-8a4c-4d3e-8b7f-2c3d4e5f6071'
    await store.chatListStore.ensure(gone)
    expect(store.chatListStore.getSnapshot().missing).toEqual([gone])
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
    const store = await import('./chat-list-store')
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
    void store.chatListStore.load()
    const refreshed = store.chatListStore.refresh() // the tab became visible
    const found = store.chatListStore.search('hello')
    const created = store.chatListStore.create()
    await vi.advanceTimersByTimeAsync(0)
    expect(inFlight).toEqual(['GET /api/sessions'])
    await answerAll()
    await Promise.all([refreshed, found, created])
    expect(most).toBeGreaterThan(1) // after the first answer, the rest go out together
    expect(inFlight).toEqual([])
  })
})

describe('two tabs of one browser', () => {
  const gets = () => calls.filter((c) => c.method === 'GET').length

  it('a delete in one tab hides the chat in the other at once, Undo brings it back in its place, and the end of the window marks it gone', async () => {
    const a = await freshStore()
    const b = await freshStore()
    a.chatListStore.remove('b')
    await vi.advanceTimersByTimeAsync(0)
    expect(ids(b)).toEqual(['a', 'c'])
    // A list B reads meanwhile does not bring it back (the server still has it).
    await b.chatListStore.refresh()
    expect(ids(b)).toEqual(['a', 'c'])
    expect(b.chatListStore.getSnapshot().pendingDelete).toBeUndefined() // the toast is A's

    a.chatListStore.undo('b')
    await vi.advanceTimersByTimeAsync(0)
    expect(ids(b)).toEqual(['a', 'b', 'c'])

    a.chatListStore.remove('b')
    await vi.advanceTimersByTimeAsync(0)
    expect(b.chatListStore.getSnapshot().missing).toEqual([])
    await vi.advanceTimersByTimeAsync(a.UNDO_MS)
    await vi.waitFor(() => expect(b.chatListStore.getSnapshot().missing).toEqual(['b']))
    expect(deletes()).toEqual(['/api/sessions/b']) // once, by A
    expect(ids(b)).toEqual(['a', 'c'])
    expect(b.chatListStore.getSnapshot().missing).toEqual(['b'])
  })

  it('a chat hidden by the other tab’s delete keeps its summary, so a header showing it keeps its title until the delete is final', async () => {
    const a = await freshStore()
    const b = await freshStore()
    a.chatListStore.remove('b')
    await vi.advanceTimersByTimeAsync(0)
    expect(ids(b)).toEqual(['a', 'c'])
    expect(b.chatListStore.getSnapshot().opened.b?.title).toBe('b')
  })

  it('a delete that fails puts the chat back in the other tab too', async () => {
    const a = await freshStore()
    const b = await freshStore()
    deleteStatus = 500
    a.chatListStore.remove('c')
    await vi.advanceTimersByTimeAsync(0)
    expect(ids(b)).toEqual(['a', 'b'])
    await vi.advanceTimersByTimeAsync(a.UNDO_MS)
    await vi.waitFor(() => expect(ids(b)).toEqual(['a', 'b', 'c']))
    expect(b.chatListStore.getSnapshot().missing).toEqual([])
  })

  it('a rename in one tab retitles the chat in the other, with no request', async () => {
    const a = await freshStore()
    const b = await freshStore()
    vi.stubGlobal('fetch', async (url: string, init: RequestInit = {}) => {
      calls.push({ url, method: init.method ?? 'GET' })
      if (init.method === 'PATCH') return Response.json({ session: session('a', 'Renamed') })
      return Response.json({ sessions: listed })
    })
    await a.chatListStore.rename('a', 'Renamed')
    const before = calls.length
    await vi.advanceTimersByTimeAsync(0)
    expect(b.chatListStore.getSnapshot().sessions.find((s) => s.id === 'a')?.title).toBe('Renamed')
    // A re-reads its own list after a rename; B needs no request for it.
    expect(calls.slice(before).filter((c) => c.method === 'GET').length).toBeLessThanOrEqual(1)
  })

  it('a chat created (or titled) in one tab: the other re-reads its list', async () => {
    const a = await freshStore()
    const b = await freshStore()
    listed = [session('new', ''), ...listed]
    vi.stubGlobal('fetch', async (url: string, init: RequestInit = {}) => {
      calls.push({ url, method: init.method ?? 'GET' })
      if (init.method === 'POST') return Response.json({ session: session('new', '') }, { status: 201 })
      return Response.json({ sessions: listed })
    })
    await a.chatListStore.create()
    const before = gets()
    await vi.advanceTimersByTimeAsync(0)
    expect(gets()).toBe(before + 1)
    expect(ids(b)).toEqual(['new', 'a', 'b', 'c'])

    listed = [session('new', 'Hello there'), ...listed.slice(1)]
    await a.chatListStore.changed()
    await vi.advanceTimersByTimeAsync(0)
    expect(b.chatListStore.getSnapshot().sessions[0].title).toBe('Hello there')
  })
})

describe('search results', () => {
  it('follow what the list knows since: a delete hides one, a rename retitles it', async () => {
    const a = await freshStore()
    const b = await freshStore()
    const found = session('b', 'old title')
    expect(b.chatListStore.current(found)?.title).toBe('b') // the list's title
    a.chatListStore.remove('b')
    await vi.advanceTimersByTimeAsync(0)
    expect(b.chatListStore.current(found)).toBeUndefined()
    expect(a.chatListStore.current(found)).toBeUndefined()
    expect(b.chatListStore.current(session('elsewhere', 'kept'))?.title).toBe('kept')
  })
})
