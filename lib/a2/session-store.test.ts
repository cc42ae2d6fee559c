import { describe, expect, it } from 'vitest'
import { createSessionStore } from '@/lib/a2/react'
import type { A2Event } from '@/lib/a2'

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
  const fn = (async (_url: string, init: RequestInit) => {
    calls.push(String(init.body))
    return answer(JSON.parse(String(init.body)))
  }) as unknown as typeof fetch
  return { fn, calls }
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
    expect(store.getSnapshot()).toMatchObject({ state: ['note:a'], pending: [], frontier: 0 })
    // The tail delivers the same event again: ignored.
    store.receive([confirmed])
    expect(store.getSnapshot().state).toEqual(['note:a'])
    expect(store.getSnapshot().events).toHaveLength(1)
  })

  it('ignores duplicate and replayed deliveries and keeps index order', () => {
    const store = createSessionStore<State>({ sessionId: 's', reducer, initial: [], fetch: fakeFetch(() => new Response()).fn })
    store.receive([event(0, 'a'), event(1, 'b')])
    store.receive([event(0, 'a'), event(1, 'b'), event(2, 'c')])
    expect(store.getSnapshot().state).toEqual(['note:a', 'note:b', 'note:c'])
    expect(store.getSnapshot().frontier).toBe(2)
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
    await new Promise((r) => setTimeout(r, 20))
    expect(order).toEqual(['start generate']) // the Stop waits for the generate to land
    release()
    await Promise.all([a, b])
    expect(order).toEqual(['start generate', 'end generate', 'start cancelled', 'end cancelled'])
  })
})
