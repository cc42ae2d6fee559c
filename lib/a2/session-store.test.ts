import { afterEach, describe, expect, it } from 'vitest'
import { A2HttpError, createSessionStore, PushError, startOutboxCourier } from '@/lib/a2/react'
import { heldByOutbox, httpErrorOf, outboxKeyOf, type A2Event } from '@/lib/a2'

type State = string[]
const reducer = (state: State, event: A2Event) => [...state, `${event.type}:${(event.payload as { v: string }).v}`]
const event = (index: number, v: string, id = `s${index}`): A2Event => ({
  id,
  sessionId: 's',
  index,
  type: 'note',
  payload: { v },
  createdAt: '2026-01-01T00:00:00.000Z',
})

function fakeFetch(answer: (body: { id: string; type: string; payload: unknown }) => Response | Promise<Response>) {
  const calls: string[] = []
  /** Each send's `keepalive` (a send the browser finishes after its page is gone). */
  const keepalive: boolean[] = []
  const listeners = new Set<() => void>()
  const fn = (async (_url: string, init: RequestInit) => {
    calls.push(String(init.body))
    keepalive.push(init.keepalive === true)
    for (const listener of listeners) listener()
    return answer(JSON.parse(String(init.body)))
  }) as unknown as typeof fetch
  /** Calls `listener` on every send: what `until` waits on for a count of sends. */
  const onCall = (listener: () => void) => {
    listeners.add(listener)
    return () => void listeners.delete(listener)
  }
  return { fn, calls, keepalive, onCall }
}

describe('the session store', () => {
  it('shows a push at once, then replaces it with the server’s event without double-counting', async () => {
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const { fn } = fakeFetch(async (body) => {
      await gate
      return Response.json({ events: [{ ...event(0, 'a'), id: body.id }] }, { status: 201 })
    })
    const store = createSessionStore<State>({ sessionId: 's', reducer, initial: [], fetch: fn })
    const pushed = store.push({ type: 'note', payload: { v: 'a' } })
    expect(store.getSnapshot().state).toEqual(['note:a'])
    expect(store.getSnapshot().pending).toHaveLength(1)
    release()
    const [confirmed] = await pushed
    expect(store.getSnapshot()).toMatchObject({ state: ['note:a'], pending: [], lastSeenIndex: 0 })
    // The tail delivers the same event again: ignored.
    store.receive([confirmed])
    expect(store.getSnapshot().state).toEqual(['note:a'])
    expect(store.getSnapshot().events).toHaveLength(1)
  })

  it('amends the confirmed state (older history brought in beside the log) with pending pushes still on top', async () => {
    const { fn } = fakeFetch(() => new Promise<Response>(() => {})) // the push stays pending
    const store = createSessionStore<State>({ sessionId: 's', reducer, initial: [], fetch: fn })
    store.receive([event(0, 'a')])
    void store.push({ type: 'note', payload: { v: 'mine' } })
    const before = store.getSnapshot()
    store.amend((state) => ['older', ...state])
    expect(store.getSnapshot()).not.toBe(before)
    expect(store.getSnapshot()).toMatchObject({ state: ['older', 'note:a', 'note:mine'], lastSeenIndex: 0 })
    store.receive([event(1, 'b')])
    expect(store.getSnapshot().state).toEqual(['older', 'note:a', 'note:b', 'note:mine'])
    const same = store.getSnapshot()
    store.amend((state) => state) // no change: no new snapshot
    expect(store.getSnapshot()).toBe(same)
  })

  it('ignores duplicate and replayed deliveries and keeps index order', () => {
    const store = createSessionStore<State>({ sessionId: 's', reducer, initial: [], fetch: fakeFetch(() => new Response()).fn })
    store.receive([event(0, 'a'), event(1, 'b')])
    store.receive([event(0, 'a'), event(1, 'b'), event(2, 'c')])
    expect(store.getSnapshot().state).toEqual(['note:a', 'note:b', 'note:c'])
    expect(store.getSnapshot().lastSeenIndex).toBe(2)
  })

  it('retries a push on a 5xx with the same event id, so the server sees one event', async () => {
    let n = 0
    const { fn, calls } = fakeFetch((body) =>
      ++n < 3
        ? Response.json({ error: { code: 'unavailable', message: 'try later' } }, { status: 503 })
        : Response.json({ events: [{ ...event(0, 'x'), id: body.id }] }, { status: 201 }),
    )
    const store = createSessionStore<State>({ sessionId: 's', reducer, initial: [], fetch: fn, retryDelaysMs: [1, 1, 1] })
    await store.push({ type: 'note', payload: { v: 'x' } })
    expect(calls).toHaveLength(3)
    expect(new Set(calls.map((c) => JSON.parse(c).id)).size).toBe(1)
  })

  it('rolls back a refused push and reports the error with the inputs to retry', async () => {
    const { fn } = fakeFetch(() => Response.json({ error: { code: 'invalid_payload', message: 'bad' } }, { status: 400 }))
    const store = createSessionStore<State>({ sessionId: 's', reducer, initial: [], fetch: fn })
    await expect(store.push({ type: 'note', payload: { v: 'y' } })).rejects.toMatchObject({ code: 'invalid_payload', status: 400 })
    expect(store.getSnapshot().state).toEqual([])
    expect(store.getSnapshot().error).toMatchObject({ code: 'invalid_payload', inputs: [{ type: 'note' }] })
  })

  it('fails a push with a real Error: a PushError, an A2HttpError, with the status, the Retry-After and the inputs', async () => {
    const limited = fakeFetch(() =>
      Response.json({ error: { code: 'rate_limited', message: 'slow down' } }, { status: 429, headers: { 'retry-after': '7' } }),
    )
    const store = createSessionStore<State>({ sessionId: 's', reducer, initial: [], fetch: limited.fn, retryDelaysMs: [] })
    const failure = await store.push({ type: 'note', payload: { v: 'z' } }).catch((e: unknown) => e)
    expect(failure).toBeInstanceOf(Error)
    expect(failure).toBeInstanceOf(A2HttpError)
    expect(failure).toBeInstanceOf(PushError)
    expect(failure).toMatchObject({ name: 'PushError', code: 'rate_limited', message: 'slow down', status: 429, retryAfterS: 7 })
    expect((failure as PushError).inputs).toMatchObject([{ type: 'note', payload: { v: 'z' } }])
    expect((failure as Error).stack).toContain('PushError')
    expect(store.getSnapshot().error).toBe(failure)

    const offline = createSessionStore<State>({
      sessionId: 's',
      reducer,
      initial: [],
      fetch: (async () => Promise.reject(new TypeError('fetch failed'))) as unknown as typeof fetch,
      retryDelaysMs: [],
    })
    const unreached = await offline.push({ type: 'note', payload: { v: 'z' } }).catch((e: unknown) => e)
    expect(unreached).toBeInstanceOf(PushError)
    expect(unreached).toMatchObject({ code: 'network', status: undefined })
    expect((unreached as Error).cause).toBeInstanceOf(TypeError)
  })

  it('a snapshot refused with a 4xx A2HttpError ends loading with that status; other failures are retried', async () => {
    let calls = 0
    const refused = new Response(JSON.stringify({ error: { code: 'not_found', message: 'no such chat' } }), { status: 404 })
    const store = createSessionStore<State>({
      sessionId: 's',
      reducer,
      initial: [],
      fetch: fakeFetch(() => new Response()).fn,
      snapshot: async () => {
        calls++
        if (calls === 1) throw new TypeError('fetch failed') // no answer: retried
        throw httpErrorOf(refused, { error: { code: 'not_found', message: 'no such chat' } })
      },
    })
    store.connect()
    await expect.poll(() => store.getSnapshot().error, { timeout: 5_000 }).toBeDefined()
    store.close()
    expect(calls).toBe(2)
    const error = store.getSnapshot().error
    expect(error).toBeInstanceOf(PushError)
    expect(error).toMatchObject({ code: 'http_404', status: 404, message: 'no such chat', inputs: [] })
    expect(store.getSnapshot().loaded).toBe(false)
  })
})

describe('push ordering', () => {
  it('sends pushes one after another, in the order they were made', async () => {
    const order: string[] = []
    let release!: () => void
    const first = new Promise<void>((r) => (release = r))
    let n = 0
    const { fn } = fakeFetch(async (body) => {
      const label = (body.payload as { v: string }).v
      order.push(`start ${label}`)
      if (label === 'generate') await first
      order.push(`end ${label}`)
      return Response.json({ events: [{ ...event(n, label), id: body.id, index: n++ }] }, { status: 201 })
    })
    const store = createSessionStore<State>({ sessionId: 's', reducer, initial: [], fetch: fn })
    const a = store.push({ type: 'note', payload: { v: 'generate' } })
    const b = store.push({ type: 'note', payload: { v: 'cancelled' } })
    // The fake fetch answers without I/O or timers: a send not queued behind the first would
    // have begun within the microtasks that follow the push, all run before the next macrotask.
    await new Promise((r) => setImmediate(r))
    expect(order).toEqual(['start generate']) // the Stop waits for the generate to land
    release()
    await Promise.all([a, b])
    expect(order).toEqual(['start generate', 'end generate', 'start cancelled', 'end cancelled'])
  })
})

/** A Storage stand-in shared by two stores: what survives a reload of the tab. */
/** The intents stored under `key` still to send: an acknowledged one (its log index, not -1) stays for the chat's next page, never sent again. */
function toSend(storage: { getItem(key: string): string | null }, key = outboxKeyOf('s')): string[] {
  return (JSON.parse(storage.getItem(key) ?? '[]') as A2Event[]).filter((e) => e.index < 0).map((e) => e.id)
}

function memoryStorage() {
  const items = new Map<string, string>()
  return {
    items,
    getItem: (key: string) => items.get(key) ?? null,
    setItem: (key: string, value: string) => void items.set(key, value),
    removeItem: (key: string) => void items.delete(key),
  }
}

type Subscribe = (listener: () => void) => () => void

/**
 * Resolves once `check` holds, checked now and again on every change `on` announces (a store's
 * subscribe, a fake fetch's onCall); rejects naming `what` after `timeoutMs`.
 */
function until(check: () => boolean, what: string, on: Subscribe[], timeoutMs = 2_000): Promise<void> {
  if (check()) return Promise.resolve()
  return new Promise((resolve, reject) => {
    const stop = () => {
      clearTimeout(timer)
      for (const off of offs) off()
    }
    const timer = setTimeout(() => {
      stop()
      reject(new Error(`timed out waiting for ${what}`))
    }, timeoutMs)
    const offs = on.map((subscribe) =>
      subscribe(() => {
        if (!check()) return
        stop()
        resolve()
      }),
    )
  })
}

describe('the outbox: a durable push is an intent, kept until the server acknowledges it', () => {
  const offline = () => fakeFetch(() => Promise.reject(new TypeError('Failed to fetch')))

  it('keeps retrying past the ordinary retries, is never rolled back, survives a reload, and is sent with the same id after it', async () => {
    const storage = memoryStorage()
    const down = offline()
    const before = createSessionStore<State>({
      sessionId: 's',
      reducer,
      initial: [],
      fetch: down.fn,
      retryDelaysMs: [1, 1, 1],
      durableTypes: ['note'],
      storage,
    })
    void before.push({ id: 'stop-1', type: 'note', payload: { v: 'stop' } })
    // Twice the ordinary budget (1 try + 3 retries) has failed: still shown, still kept, no error.
    await until(() => (before.getSnapshot().outbox[0]?.failures ?? 0) >= 8, 'eight failed sends', [before.subscribe])
    expect(before.getSnapshot().state).toEqual(['note:stop'])
    expect(before.getSnapshot().error).toBeUndefined()
    expect(before.getSnapshot().outbox).toMatchObject([{ event: { id: 'stop-1' } }])
    expect(before.getSnapshot().outbox[0].failures).toBeGreaterThanOrEqual(8)
    before.close()
    const sentBeforeReload = down.calls.length

    // The reload: a new store on the same storage shows the Stop at once and sends it again.
    let acknowledge!: () => void
    const acknowledged = new Promise<void>((r) => (acknowledge = r))
    const up = fakeFetch(async (body) => {
      await acknowledged
      return Response.json({ events: [{ ...event(0, 'stop'), id: body.id }] }, { status: 201 })
    })
    const after = createSessionStore<State>({
      sessionId: 's',
      reducer,
      initial: [],
      fetch: up.fn,
      retryDelaysMs: [1, 1, 1],
      durableTypes: ['note'],
      storage,
    })
    expect(after.getSnapshot().state).toEqual(['note:stop'])
    expect(down.calls.length).toBe(sentBeforeReload) // the closed store stopped retrying
    after.connect()
    await until(() => up.calls.length === 1, 'the resend after the reload', [up.onCall])
    expect(JSON.parse(up.calls[0]).id).toBe('stop-1')
    acknowledge()
    await until(() => after.getSnapshot().outbox.length === 0, 'the acknowledgement', [after.subscribe])
    expect(after.getSnapshot()).toMatchObject({ state: ['note:stop'], pending: [], lastSeenIndex: 0 })
    // Kept as the log has it, for a page of this chat rendered before it landed; never sent again.
    expect(JSON.parse(storage.getItem(outboxKeyOf('s'))!)).toMatchObject([{ id: 'stop-1', index: 0 }])
  })

  it('a page rendered on the server hydrates against the store as made: the outbox shows right after, and its key names the session', async () => {
    const storage = memoryStorage()
    const made = { sessionId: 's/1', reducer, initial: ['message:hi'], after: 4, fetch: offline().fn, durableTypes: ['note'], storage }
    const first = createSessionStore<State>(made)
    void first.push({ id: 'stop-1', type: 'note', payload: { v: 'stop' } })
    first.close()
    // The outbox's key is what a server-rendered page checks before painting (outboxKeyOf).
    expect([...storage.items.keys()]).toEqual([outboxKeyOf('s/1')])

    const reloaded = createSessionStore<State>(made)
    expect(reloaded.getSnapshot().state).toEqual(['message:hi', 'note:stop'])
    expect(reloaded.getServerSnapshot()).toMatchObject({ state: ['message:hi'], pending: [], outbox: [], lastSeenIndex: 4, loaded: true })
    // The same object each time (useSyncExternalStore compares by identity).
    expect(reloaded.getServerSnapshot()).toBe(reloaded.getServerSnapshot())
  })

  it('a page whose browser holds nothing the server lacks hydrates with no second render: its snapshot is the server’s until one differs', async () => {
    const made = {
      sessionId: 's',
      reducer,
      initial: ['message:hi'],
      after: 4,
      events: [event(4, 'hi')],
      fetch: offline().fn,
      storage: memoryStorage(),
    }
    const store = createSessionStore<State>(made)
    // useSyncExternalStore renders the page again, synchronously, when these two differ by identity.
    expect(store.getSnapshot()).toBe(store.getServerSnapshot())
    store.receive([event(5, 'more')])
    expect(store.getSnapshot()).not.toBe(store.getServerSnapshot())
    expect(store.getSnapshot()).toMatchObject({ state: ['message:hi', 'note:more'], lastSeenIndex: 5 })
  })

  it('connect() sends the outbox at once and opens the tail a task later, so hydration’s effects do not render the page again; closed before then, no stream opens', async () => {
    const storage = memoryStorage()
    const down = offline()
    const before = createSessionStore<State>({ sessionId: 's', reducer, initial: [], fetch: down.fn, durableTypes: ['note'], storage })
    void before.push({ id: 'stop-1', type: 'note', payload: { v: 'stop' } })
    before.close()
    const opened: string[] = []
    class RecordingEventSource {
      onopen?: () => void
      onmessage?: unknown
      onerror?: unknown
      constructor(url: string) {
        opened.push(url)
      }
      close() {}
    }
    const up = fakeFetch(async (body) => Response.json({ events: [{ ...event(0, 'stop'), id: body.id }] }, { status: 201 }))
    const made = {
      sessionId: 's',
      reducer,
      initial: [],
      fetch: up.fn,
      durableTypes: ['note'],
      storage,
      EventSource: RecordingEventSource as unknown as typeof EventSource,
    }
    const page = createSessionStore<State>(made)
    let changes = 0
    page.subscribe(() => changes++)
    page.connect()
    // Nothing changed in this task: React's effects that connect render nothing again.
    expect(changes).toBe(0)
    expect(opened).toEqual([])
    // The Stop goes whether or not the stream ever opens (this one never does).
    await until(() => up.calls.length === 1, 'the Stop’s send', [up.onCall])
    expect(JSON.parse(up.calls[0]).id).toBe('stop-1')
    await expect.poll(() => opened.length).toBe(1)
    expect(page.getSnapshot().connection).toBe('connecting')

    const left = createSessionStore<State>({ ...made, sessionId: 'left', storage: memoryStorage() })
    left.connect()
    left.close()
    // A store connected after it opens its tail in a task queued after the one `left` had queued.
    const later = createSessionStore<State>({ ...made, sessionId: 'later', storage: memoryStorage() })
    later.connect()
    await expect.poll(() => opened.length).toBe(2)
    expect(opened[1]).toContain('/later/')
    expect(opened.filter((url) => url.includes('/left/'))).toEqual([])
    later.close()
    page.close()
  })

  it('a Stop acknowledged just before a reload still cuts the reloaded page, whose HTML the server rendered before the Stop landed', async () => {
    const storage = memoryStorage()
    const taken = fakeFetch((body) => Response.json({ events: [{ ...event(7, 'stop'), id: body.id }] }, { status: 201 }))
    const pressed = createSessionStore<State>({
      sessionId: 's',
      reducer,
      initial: ['note:a'],
      after: 3,
      fetch: taken.fn,
      durableTypes: ['note'],
      storage,
    })
    // Stop, then reload at once: the server takes the Stop (index 7) and the old page hears so
    // before it unloads, while the reload's HTML was rendered from the log at index 5.
    await pressed.push({ id: 'stop-1', type: 'note', payload: { v: 'stop' } })
    pressed.close()
    const resent = fakeFetch(() => Response.json({ error: { code: 'unexpected', message: 'sent again' } }, { status: 400 }))
    const reloaded = createSessionStore<State>({
      sessionId: 's',
      reducer,
      initial: ['note:a', 'note:b'],
      after: 5,
      fetch: resent.fn,
      durableTypes: ['note'],
      storage,
    })
    expect(reloaded.getSnapshot().state).toEqual(['note:a', 'note:b', 'note:stop'])
    // Nothing is left to send: the Stop is in the log; the tail brings it.
    expect(reloaded.getSnapshot().outbox).toEqual([])
    reloaded.connect()
    // A push queued after connect() goes once the outbox's delivery has had its turn (pushes leave in order).
    await reloaded.push({ id: 'probe', type: 'probe', payload: {} }).catch(() => {})
    expect(resent.calls.map((c) => JSON.parse(c).id)).toEqual(['probe'])
    reloaded.receive([event(6, 'c'), { ...event(7, 'stop'), id: 'stop-1' }])
    expect(reloaded.getSnapshot()).toMatchObject({ state: ['note:a', 'note:b', 'note:c', 'note:stop'], pending: [] })
    reloaded.close()

    // A page whose first fold holds the Stop needs it no more: the outbox lets it go.
    const later = createSessionStore<State>({ sessionId: 's', reducer, initial: ['note:a', 'note:b', 'note:c', 'note:stop'], after: 7, storage })
    expect(later.getSnapshot().pending).toEqual([])
    expect(storage.items.size).toBe(0)
  })

  it('holds a server-rendered page while its outbox has an intent its first fold lacks, with the source the page runs', () => {
    // The page's inline script runs heldByOutbox's own source (hold-if-pending.tsx).
    const inPage = new Function(`return (${heldByOutbox.toString()})`)() as typeof heldByOutbox
    const stored = (...events: Array<Partial<A2Event>>) => JSON.stringify(events.map((e) => ({ ...event(-1, 'stop'), ...e })))
    const cases: Array<[raw: string | null, lastSeenIndex: number, held: boolean]> = [
      [null, 5, false],
      [stored({ index: -1 }), 5, true], // not acknowledged
      [stored({ index: 7 }), 5, true], // landed after the fold the page was rendered from
      [stored({ index: 5 }), 5, false],
      [stored({ index: 3 }, { index: 6 }), 5, true],
      ['not json', 5, true],
      ['{"index":1}', 5, true],
      ['[null]', 5, true],
    ]
    for (const [raw, lastSeenIndex, held] of cases) {
      expect([raw, heldByOutbox(raw, lastSeenIndex)]).toEqual([raw, held])
      expect([raw, inPage(raw, lastSeenIndex)]).toEqual([raw, held])
    }
  })

  it('treats a 4xx as final (except 408 and 429): one send, dropped from the outbox, reported', async () => {
    const storage = memoryStorage()
    const refused = fakeFetch(() => Response.json({ error: { code: 'invalid_payload', message: 'bad' } }, { status: 400 }))
    const store = createSessionStore<State>({
      sessionId: 's',
      reducer,
      initial: [],
      fetch: refused.fn,
      retryDelaysMs: [1],
      durableTypes: ['note'],
      storage,
    })
    await expect(store.push({ type: 'note', payload: { v: 'x' } })).rejects.toMatchObject({ status: 400 })
    expect(refused.calls).toHaveLength(1)
    expect(store.getSnapshot()).toMatchObject({ outbox: [], error: { code: 'invalid_payload' } })
    expect(storage.items.size).toBe(0)

    for (const status of [408, 429]) {
      let n = 0
      const busy = fakeFetch((body) =>
        ++n < 6 ? new Response('{}', { status }) : Response.json({ events: [{ ...event(0, 'y'), id: body.id }] }, { status: 201 }),
      )
      const retrying = createSessionStore<State>({
        sessionId: 's',
        reducer,
        initial: [],
        fetch: busy.fn,
        retryDelaysMs: [1],
        durableTypes: ['note'],
        storage,
      })
      await retrying.push({ type: 'note', payload: { v: 'y' } })
      expect(busy.calls).toHaveLength(6)
      expect(retrying.getSnapshot().outbox).toEqual([])
    }
  })

  it('resends at once when the tail reconnects (the server is back), not at its next retry', async () => {
    let up = false
    const calls: number[] = []
    const fn = (async (_url: string, init: RequestInit) => {
      calls.push(Date.now())
      if (!up) throw new TypeError('Failed to fetch')
      return Response.json({ events: [{ ...event(0, 'stop'), id: JSON.parse(String(init.body)).id }] }, { status: 201 })
    }) as unknown as typeof fetch
    const sources: Array<{ onopen?: () => void }> = []
    class FakeEventSource {
      readyState = 0
      onopen?: () => void
      onmessage?: unknown
      onerror?: unknown
      constructor() {
        sources.push(this)
      }
      close() {}
    }
    // After the first failure the next retry is a minute away: only the wake-up can send it sooner.
    const store = createSessionStore<State>({
      sessionId: 's',
      reducer,
      initial: [],
      fetch: fn,
      retryDelaysMs: [60_000],
      durableTypes: ['note'],
      storage: memoryStorage(),
      EventSource: FakeEventSource as unknown as typeof EventSource,
    })
    store.connect()
    void store.push({ type: 'note', payload: { v: 'stop' } })
    await until(() => store.getSnapshot().outbox[0]?.failures === 1, 'the first failed send', [store.subscribe])
    await expect.poll(() => sources.length).toBe(1) // the tail's stream, opened a task after connect()
    up = true
    sources[0].onopen?.()
    await until(() => store.getSnapshot().outbox.length === 0, 'the resend on reconnect', [store.subscribe])
    expect(calls).toHaveLength(2)
    store.close()
  })

  it('is shared by the tabs of one session: a Stop stored by a tab since closed is kept, shown and sent by the other', async () => {
    const storage = memoryStorage()
    const options = { sessionId: 's', reducer, initial: [] as State, retryDelaysMs: [1], durableTypes: ['note'], storage }
    let up = false
    let index = 0
    const server = fakeFetch((body) =>
      up
        ? Response.json({ events: [{ ...event(index++, body.id), id: body.id }] }, { status: 201 })
        : Promise.reject(new TypeError('Failed to fetch')),
    )
    // Both tabs are open before either Stop: each loaded the (empty) stored list.
    const tabA = createSessionStore<State>({ ...options, fetch: server.fn })
    const tabB = createSessionStore<State>({ ...options, fetch: server.fn })
    void tabA.push({ id: 'stop-a', type: 'note', payload: { v: 'a' } })
    await until(() => tabA.getSnapshot().outbox[0]?.failures === 1, 'tab A’s failed send', [tabA.subscribe])
    tabA.close() // the tab is closed while the server is away
    void tabB.push({ id: 'stop-b', type: 'note', payload: { v: 'b' } })
    // Tab A's Stop is still stored, and tab B shows it beside its own.
    expect([...storage.items.values()].join('')).toContain('stop-a')
    expect(tabB.getSnapshot().state).toEqual(['note:b', 'note:a'])
    up = true
    await until(() => tabB.getSnapshot().outbox.length === 0, 'both Stops acknowledged', [tabB.subscribe])
    const sent = new Set(server.calls.map((c) => JSON.parse(c).id))
    expect(sent).toEqual(new Set(['stop-a', 'stop-b']))
    expect(toSend(storage)).toEqual([])
    tabB.close()
  })

  it('a Stop another tab stored is shown and sent by this tab at once (the storage event), and settles in the tab that made it', async () => {
    const storage = memoryStorage()
    const windowBefore = (globalThis as { window?: unknown }).window
    const fakeWindow = new EventTarget()
    ;(globalThis as { window?: unknown }).window = fakeWindow
    try {
      const options = { sessionId: 's', reducer, initial: [] as State, retryDelaysMs: [60_000], durableTypes: ['note'], storage }
      const down = offline()
      let acknowledge!: () => void
      const acknowledged = new Promise<void>((r) => (acknowledge = r))
      const up = fakeFetch(async (body) => {
        await acknowledged
        return Response.json({ events: [{ ...event(0, 'stop'), id: body.id }] }, { status: 201 })
      })
      const pressed = createSessionStore<State>({ ...options, fetch: down.fn })
      const other = createSessionStore<State>({ ...options, fetch: up.fn })
      other.connect()
      const stopped = pressed.push({ id: 'stop-1', type: 'note', payload: { v: 'stop' } })
      await until(() => down.calls.length >= 1, 'the pressing tab’s failed send', [down.onCall])
      // The browser tells every other tab of the origin that the stored list changed.
      fakeWindow.dispatchEvent(Object.assign(new Event('storage'), { key: 'a2.outbox:/api/sessions/s/events' }))
      expect(other.getSnapshot().state).toEqual(['note:stop'])
      await until(() => up.calls.length === 1, 'the other tab’s send', [up.onCall])
      expect(JSON.parse(up.calls[0]).id).toBe('stop-1')
      acknowledge()
      await until(() => other.getSnapshot().outbox.length === 0, 'the acknowledgement', [other.subscribe])
      // The pressing tab learns it from its feed (the tail), and its push resolves.
      pressed.receive([{ ...event(0, 'stop'), id: 'stop-1' }])
      await expect(stopped).resolves.toMatchObject([{ id: 'stop-1' }])
      expect(pressed.getSnapshot()).toMatchObject({ outbox: [], pending: [], state: ['note:stop'] })
      expect(toSend(storage)).toEqual([])
      pressed.close()
      other.close()
    } finally {
      ;(globalThis as { window?: unknown }).window = windowBefore
    }
  })

  it('sends a durable push keepalive (its tab may close while it is on its way), an ordinary one not', async () => {
    const sent = fakeFetch((body) => Response.json({ events: [{ ...event(0, body.type === 'note' ? 'x' : 'y'), id: body.id }] }, { status: 201 }))
    const store = createSessionStore<State>({
      sessionId: 's',
      reducer,
      initial: [],
      fetch: sent.fn,
      durableTypes: ['note'],
      storage: memoryStorage(),
    })
    await store.push({ type: 'note', payload: { v: 'x' } })
    await store.push({ type: 'other', payload: { v: 'y' } }).catch(() => {})
    expect(sent.keepalive).toEqual([true, false])
  })

  it('drops an entry the server had already taken (its answer was lost) once the reloaded feed holds it', async () => {
    const storage = memoryStorage()
    const lost = offline()
    const first = createSessionStore<State>({
      sessionId: 's',
      reducer,
      initial: [],
      fetch: lost.fn,
      retryDelaysMs: [1],
      durableTypes: ['note'],
      storage,
    })
    void first.push({ id: 'stop-2', type: 'note', payload: { v: 'stop' } })
    await until(() => lost.calls.length >= 1, 'one send', [lost.onCall])
    first.close()
    // The server had appended it at index 0; the reloaded page's feed starts after it.
    const replay = fakeFetch((body) => Response.json({ events: [{ ...event(0, 'stop'), id: body.id }], duplicate: true }, { status: 200 }))
    const second = createSessionStore<State>({
      sessionId: 's',
      reducer,
      initial: ['note:stop'],
      after: 0,
      fetch: replay.fn,
      durableTypes: ['note'],
      storage,
    })
    second.connect()
    await until(() => second.getSnapshot().outbox.length === 0, 'the duplicate acknowledgement', [second.subscribe])
    expect(second.getSnapshot()).toMatchObject({ state: ['note:stop'], pending: [] })
  })
})

describe('a Stop that reaches the server before the answer it names', () => {
  const closeAfter: Array<{ close(): void }> = []
  afterEach(() => {
    for (const store of closeAfter.splice(0)) store.close()
  })

  /**
   * A server whose log refuses a Stop (`note` with `of`) naming an event it does not hold yet,
   * 422 invalid_reference as the chat's admission does; `gen` pushes wait for `land()`.
   */
  function orderedServer() {
    const log: string[] = []
    const refusals: string[] = []
    let land!: () => void
    const landed = new Promise<void>((r) => (land = r))
    const answer = async (body: { id: string; type: string; payload: unknown }) => {
      if (body.type === 'gen') await landed
      const of = (body.payload as { of?: string }).of
      if (of !== undefined && !log.includes(of)) {
        refusals.push(body.id)
        return Response.json({ error: { code: 'invalid_reference', message: 'cancelled.of must name an answer in this chat' } }, { status: 422 })
      }
      if (!log.includes(body.id)) log.push(body.id)
      return Response.json({ events: [{ ...event(log.indexOf(body.id), 'x'), id: body.id }] }, { status: 201 })
    }
    return { log, refusals, land, answer }
  }

  it('a second tab that adopts the Stop (the storage event) while the first tab’s generate is still on its way holds it until the generate lands', async () => {
    const storage = memoryStorage()
    const windowBefore = (globalThis as { window?: unknown }).window
    const fakeWindow = new EventTarget()
    ;(globalThis as { window?: unknown }).window = fakeWindow
    try {
      const server = orderedServer()
      const tabA = fakeFetch(server.answer)
      const tabB = fakeFetch(server.answer)
      const options = { sessionId: 's', reducer, initial: [] as State, retryDelaysMs: [5], durableTypes: ['note'], storage }
      const pressed = createSessionStore<State>({ ...options, fetch: tabA.fn })
      const other = createSessionStore<State>({ ...options, fetch: tabB.fn })
      closeAfter.push(pressed, other)
      pressed.connect()
      other.connect()
      const generating = pressed.push({ id: 'gen-1', type: 'gen', payload: { v: 'gen' } })
      void pressed.push({ id: 'stop-1', type: 'note', payload: { v: 'stop', of: 'gen-1' } })
      fakeWindow.dispatchEvent(Object.assign(new Event('storage'), { key: 'a2.outbox:/api/sessions/s/events' }))
      await until(() => server.refusals.length >= 1, 'the other tab’s early send, refused', [tabB.onCall, other.subscribe])
      server.land()
      await generating
      await until(() => server.log.includes('stop-1'), 'the Stop in the log, after its generate', [tabA.onCall, tabB.onCall])
      expect(server.log).toEqual(['gen-1', 'stop-1'])
      await until(() => other.getSnapshot().outbox.length === 0, 'the other tab’s acknowledgement', [other.subscribe])
      expect(other.getSnapshot().error).toBeUndefined()
      expect(server.refusals.every((id) => id === 'stop-1')).toBe(true) // held: sent again while refused
    } finally {
      ;(globalThis as { window?: unknown }).window = windowBefore
    }
  })
})

describe('a chat left while its message is on its way', () => {
  it('leaves its Stop to the page’s courier only once its own pushes have settled: the Stop goes after the generate, never refused', async () => {
    const memory = memoryStorage()
    const storage = {
      ...memory,
      get length() {
        return memory.items.size
      },
      key: (i: number) => [...memory.items.keys()][i] ?? null,
    }
    const log: string[] = []
    const sentStops: Array<{ id: string; landedAfterGenerate: boolean }> = []
    let land!: () => void
    const landed = new Promise<void>((r) => (land = r))
    const page = fakeFetch(async (body) => {
      if (body.type === 'gen') await landed
      if (body.type === 'note') sentStops.push({ id: body.id, landedAfterGenerate: log.includes('gen-1') })
      if (body.type === 'note' && !log.includes('gen-1')) {
        return Response.json({ error: { code: 'invalid_reference', message: 'cancelled.of must name an answer in this chat' } }, { status: 422 })
      }
      if (!log.includes(body.id)) log.push(body.id)
      return Response.json({ events: [{ ...event(log.indexOf(body.id), 'x'), id: body.id }] }, { status: 201 })
    })
    const store = createSessionStore<State>({
      sessionId: 'ordered',
      reducer,
      initial: [],
      fetch: page.fn,
      retryDelaysMs: [5],
      durableTypes: ['note'],
      storage,
    })
    store.connect()
    const generating = store.push({ id: 'gen-1', type: 'gen', payload: { v: 'gen' } })
    void store.push({ id: 'stop-1', type: 'note', payload: { v: 'stop', of: 'gen-1' } })
    store.close()
    const halt = startOutboxCourier({ fetch: page.fn, storage, retryDelaysMs: [5] })
    try {
      await until(() => page.calls.length >= 1, 'the generate on its way', [page.onCall])
      land()
      await generating
      const every5ms = (listener: () => void) => {
        const timer = setInterval(listener, 5)
        return () => clearInterval(timer)
      }
      await until(() => toSend(memory, outboxKeyOf('ordered')).length === 0, 'the courier’s delivery', [page.onCall, every5ms])
    } finally {
      halt()
    }
    expect(log).toEqual(['gen-1', 'stop-1'])
    expect(sentStops).toEqual([{ id: 'stop-1', landedAfterGenerate: true }])
  })
})
