import { beforeAll, describe, expect, it, vi } from 'vitest'
import { sql } from 'drizzle-orm'
import { createServer, type Store } from '@/lib/a2/server'
import { layers, useTestStore } from './test-kit/db'
import { testContract } from './test-kit/contract'
import { countingStore } from './test-kit/counting-store'
import { busFor, originOf, wakeWorkers, type Hint } from './internal/log/bus'
import { consumer } from './internal/runtime/consumer'
import { tail } from './internal/log/tail'
import { decodeHints, JOBS_CHANNEL, packedPrefix, TAIL_CHANNEL } from './internal/core/wire'
import { gate, interceptStore } from './test-kit/runtime'
import { sessionHintsSent } from './internal/log/step-hints'

/** A store on the same database that records the channels its bus LISTENs on (a fresh bus: buses are per store object). */
function listeningStore(store: Store): Store & { channels: string[] } {
  const channels: string[] = []
  return {
    ...store,
    channels,
    listen: (channel, onPayload) => {
      channels.push(channel)
      return store.listen(channel, onPayload)
    },
  }
}

describe.each(layers)('the bus on %s', (kind) => {
  const testStore = useTestStore(kind)
  let store: Store
  let server: ReturnType<typeof createServer<typeof testContract>>
  beforeAll(() => {
    store = testStore()
    // `generate` starts a job and `cancelled` cancels it: those appends are the jobs channel's.
    const generate = consumer({ contract: testContract, name: 'generate', types: ['generate'], abortOn: ['cancelled'] }).run(async () => {})
    server = createServer({ contract: testContract, consumers: [generate], store })
  })

  it('a process that does not tail LISTENs on the jobs channel only, and its workers never hear a chunk', async () => {
    const worker = listeningStore(store)
    const bus = await busFor(worker)
    const heard: Hint[] = []
    const off = bus.onAny((hint) => heard.push(hint))
    try {
      const { id } = await server.sessions.create('u1')
      const [generate] = await server.append(id, { type: 'generate', payload: {} })
      for (let i = 0; i < 5; i++) await server.append(id, { type: 'chunk', payload: { of: generate.id, delta: `${i}` } })
      await server.append(id, { type: 'cancelled', payload: { of: generate.id, lastSeenIndex: 0 } })
      // The cancel is the last append: once it is heard, every earlier notification has been delivered.
      await vi.waitFor(() => expect(heard.some((h) => h.cancels !== undefined)).toBe(true))
      expect(worker.channels).toEqual([JOBS_CHANNEL])
      expect(
        heard.filter((h) => h.sessionId === id).map((h) => ({ head: h.head, newJobs: h.newJobs ?? false, cancels: h.cancels?.length ?? 0 })),
      ).toEqual([
        { head: 1, newJobs: true, cancels: 0 },
        { head: 7, newJobs: false, cancels: 1 },
      ])
      const [cancel] = heard.find((h) => h.cancels)!.cancels!
      expect(cancel).toMatchObject({ eventIndex: 6, cancelVersion: 1 })
    } finally {
      off()
      await bus.close()
    }
  })

  it('a tailing process LISTENs on both channels and gets every append in commit order from the hints alone', async () => {
    const counted = countingStore(store)
    const reader = listeningStore(counted)
    const { id } = await server.sessions.create('u1')
    const controller = new AbortController()
    const got: number[] = []
    const done = (async () => {
      for await (const batch of tail(reader, id, { after: -1, signal: controller.signal, pollMs: 60_000 })) {
        got.push(...batch.map((e) => e.index))
        if (got.length >= 30) return
      }
    })()
    try {
      await vi.waitFor(() => expect(counted.statements).toBe(1)) // its first read (an empty log)
      expect(reader.channels.sort()).toEqual([JOBS_CHANNEL, TAIL_CHANNEL].sort())
      for (let i = 0; i < 10; i++) {
        const [generate] = await server.append(id, { type: 'generate', payload: {} }) // jobs channel
        await server.append(id, { type: 'chunk', payload: { of: generate.id, delta: 'x' } }) // tail channel, step path
        // Announced after its commit: wait for it as a consumer's own notifying append does (append.ts).
        await sessionHintsSent(store, id)
        await server.push(id, 'u1', { id: `m${i}`, type: 'message', payload: { text: 'hi' } }) // tail channel, transactional path
      }
      await done
      expect(got).toEqual(Array.from({ length: 30 }, (_, i) => i))
      expect(counted.statements).toBe(1) // no read after the first: the channels never crossed
    } finally {
      controller.abort()
      await (await busFor(reader)).close()
    }
  })

  it('drops a notification that is not a hint, saying why, and goes on', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    const bus = await busFor(listeningStore(store))
    const heard: Hint[] = []
    const off = bus.onAny((hint) => heard.push(hint))
    try {
      await store.db.execute(sql`select pg_notify(${JOBS_CHANNEL}, 'not json')`)
      await store.db.execute(sql`select pg_notify(${JOBS_CHANNEL}, ${JSON.stringify({ s: 'x', h: -1 })})`)
      await store.db.execute(sql`select pg_notify(${JOBS_CHANNEL}, ${JSON.stringify({ s: 'x', h: 1, c: [[1, 2, 'e']] })})`)
      await wakeWorkers(store.db)
      await vi.waitFor(() => expect(heard).toHaveLength(1))
      expect(heard[0]).toEqual({ sessionId: '', head: 0, newJobs: true })
      const said = errors.mock.calls.map((call) => String(call[1]))
      expect(said).toEqual([
        'a2 wire: NOTIFY hint: not JSON',
        'a2 wire: NOTIFY hint: h (head) is not an integer ≥ 0',
        'a2 wire: NOTIFY hint: c[0] is not [job id, cancel version, event id, event index]',
      ])
    } finally {
      off()
      await bus.close()
      errors.mockRestore()
    }
  })

  it('a chunk batch’s commit notifies no one: its own process’s tails have it at once, others from one notification after the commit', async () => {
    // The writer's notifying statement (after the commit) is held until released.
    const notify = gate()
    let notifying = false
    const writerStore = interceptStore(store, {
      before: async (text) => {
        if (!text.includes('a2_announce_steps')) return
        notifying = true
        await notify.promise
      },
    })
    const writer = createServer({ contract: testContract, consumers: [], store: writerStore })
    const otherProcess = listeningStore(store)
    const heard: string[] = []
    const unlisten = await store.listen(TAIL_CHANNEL, (payload) => heard.push(payload))
    const { id } = await writer.sessions.create('u1')
    const controller = new AbortController()
    const follow = (tailStore: Store, got: number[]) =>
      (async () => {
        for await (const batch of tail(tailStore, id, { after: -1, signal: controller.signal, pollMs: 60_000 }))
          got.push(...batch.map((e) => e.index))
      })()
    const here: number[] = []
    const there: number[] = []
    const tails = [follow(writerStore, here), follow(otherProcess, there)]
    try {
      await writer.push(id, 'u1', { id: 'm0', type: 'message', payload: { text: 'hi' } }) // notified in its own commit
      await vi.waitFor(() => expect([here, there]).toEqual([[0], [0]]))
      heard.length = 0
      const append = writer.append(id, { type: 'chunk', payload: { of: 'm0', delta: 'x' } })
      // Committed and handed to this process's tail, with no notification yet.
      await vi.waitFor(() => expect(here).toEqual([0, 1]))
      await store.db.execute(sql`select pg_notify(${TAIL_CHANNEL}, ${JSON.stringify({ s: 'marker', h: 1 })})`)
      await vi.waitFor(() => expect(heard.some((p) => p.includes('marker'))).toBe(true))
      expect(heard.filter((p) => p.includes(id))).toEqual([]) // the chunk's commit carried no NOTIFY
      await vi.waitFor(() => expect(notifying).toBe(true))
      await append // at its commit: the consumer's next batch does not wait for the notification
      let hintSent = false
      const sent = sessionHintsSent(writerStore, id).then(() => (hintSent = true)) // what a consumer's notifying append waits for
      await Promise.resolve()
      expect(hintSent).toBe(false)
      expect(there).toEqual([0])
      notify.open()
      await sent
      await vi.waitFor(() => expect(there).toEqual([0, 1]))
      // Sent as packed, under its store's origin (which its own bus drops before parsing).
      expect(heard.filter((p) => p.includes(id)).every((p) => p.startsWith(packedPrefix(originOf(writerStore))))).toBe(true)
      const hints = heard.filter((p) => p.includes(id)).flatMap((p) => decodeHints(p))
      expect(hints).toHaveLength(1)
      expect(hints[0]).toMatchObject({ sessionId: id, head: 2, events: [{ index: 1, type: 'chunk', payload: { of: 'm0', delta: 'x' } }] })
      expect(here).toEqual([0, 1]) // its own notification, come back, is dropped: nothing twice
    } finally {
      controller.abort()
      notify.open()
      await Promise.all(tails)
      await unlisten()
      await Promise.all([busFor(writerStore), busFor(otherProcess)].map(async (bus) => (await bus).close()))
    }
  })

  it('announces a statement’s batches packed under NOTIFY’s limit, events where they fit and heads where not', async () => {
    const heard: string[] = []
    const unlisten = await store.listen(TAIL_CHANNEL, (payload) => heard.push(payload))
    try {
      const sessions = await Promise.all(Array.from({ length: 40 }, () => server.sessions.create('u1')))
      const { appendSteps } = await import('./internal/log/batched-appends')
      const big = 'x'.repeat(990) // 9 × ~1 KB: over what one payload carries
      await Promise.all(
        sessions.map(({ id }, i) =>
          appendSteps(
            store,
            id,
            Array.from({ length: i === 0 ? 9 : 1 }, (_, k) => ({ type: 'message', payload: { text: i === 0 ? `${k}${big}` : 'y'.repeat(300) } })),
          ),
        ),
      )
      await Promise.all(sessions.map(({ id }) => sessionHintsSent(store, id)))
      const ours = sessions.map(({ id }) => id)
      await vi.waitFor(() =>
        expect(new Set(heard.flatMap((p) => decodeHints(p).map((h) => h.sessionId)).filter((s) => ours.includes(s))).size).toBe(40),
      )
      const packed = heard.filter((p) => ours.some((id) => p.includes(id)))
      for (const p of packed) {
        expect(Buffer.byteLength(p)).toBeLessThanOrEqual(7_900)
        expect(p.startsWith(packedPrefix(originOf(store)))).toBe(true)
      }
      expect(packed.length).toBeGreaterThan(1) // 39 × ~400 bytes do not fit one
      const hints = packed.flatMap((p) => decodeHints(p)).filter((h) => ours.includes(h.sessionId))
      expect(hints.find((h) => h.sessionId === ours[0])).toEqual({ sessionId: ours[0], head: 9 }) // too big: its head only
      for (const h of hints.filter((h) => h.sessionId !== ours[0])) {
        expect(h).toMatchObject({ head: 1, events: [{ index: 0, type: 'message', payload: { text: 'y'.repeat(300) } }] })
      }
    } finally {
      await unlisten()
    }
  })
})
