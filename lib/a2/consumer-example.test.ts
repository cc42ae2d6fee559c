/**
 * The consumer in lib/a2/README.md "Writing a consumer", as written there, run on PGlite:
 * it posts once, a Stop before the post keeps it from being sent, and a crash with the post in
 * flight is reconciled through the hook (never posted twice).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { consumer, createServer, isStop, type A2Server, type Store } from '@/lib/a2/server'
import { query } from './internal/store/store'
import { createTestDb, type TestDb } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'
import { quarantineOpenJobs, waitForJob } from './test-kit/runtime'

/** A receiver that remembers what it got, by idempotency key. */
const received = new Map<string, string>()
const webhook = {
  post: async ({ key, generation }: { key: string; signal: AbortSignal; generation: string }) => void received.set(key, generation),
  find: async (key: string) => received.get(key),
}

// ---- from lib/a2/README.md, unchanged ----
export const notify = consumer({
  contract: chat,
  name: 'notify',
  types: ['generate'],
  lane: 'notify', // this session's notify jobs run one at a time, in log order (§10)
  abortOn: { cancelled: (stop, run) => stop.payload.of === run.id }, // only the Stop naming this run (§3)
  // A crash left the post in flight: ask the receiver whether it arrived (§6).
  reconcile: async (idempotencyKey) => ((await webhook.find(idempotencyKey)) ? { done: true } : { done: false }),
}).run(async (ctx) => {
  try {
    // Dispatched only while the run is not stopped; `key` makes a retry a no-op at the receiver.
    await ctx.effect('post', (key, signal) => webhook.post({ key, signal, generation: ctx.event.id }))
    await ctx.append({ type: 'note', payload: { of: ctx.event.id } })
  } catch (error) {
    if (isStop(ctx.signal, error)) return // the user stopped it: the stop is the outcome (§4)
    throw error // a lost claim is surrendered, anything else retried, then FAILED (§4)
  }
})
// ---- end ----

describe('the README’s consumer', () => {
  let testDb: TestDb
  let store: Store
  let server: A2Server<typeof chat>

  beforeAll(async () => {
    testDb = await createTestDb('pglite')
    store = await testDb.open()
    server = createServer({ contract: chat, consumers: [notify], store })
  })
  afterEach(async () => {
    await server.stopWorkers()
    await quarantineOpenJobs(store)
  })
  afterAll(async () => {
    await testDb.drop()
  })

  it('posts once and notes it', async () => {
    const { id: sessionId } = await server.sessions.create('u')
    await server.startWorker({ pollMs: 50 })
    const [g] = await server.append(sessionId, { type: 'generate', payload: {} })
    const job = await waitForJob(store, g.id, 'notify', (j) => j.status === 'COMPLETED')
    expect(received.get(`a2-${job.id}-post`)).toBe(g.id)
  })

  it('a Stop before the post: nothing is sent, the run ends CANCELLED', async () => {
    const { id: sessionId } = await server.sessions.create('u')
    const [g] = await server.append(sessionId, { type: 'generate', payload: {} })
    await server.append(sessionId, { type: 'cancelled', payload: { of: g.id, lastSeenIndex: g.index } })
    await server.startWorker({ pollMs: 50 })
    const job = await waitForJob(store, g.id, 'notify', (j) => j.status === 'CANCELLED')
    expect(received.has(`a2-${job.id}-post`)).toBe(false)
  })

  it('a crash with the post in flight is reconciled by the hook: posted once, the run completes', async () => {
    const { id: sessionId } = await server.sessions.create('u')
    const [g] = await server.append(sessionId, { type: 'generate', payload: {} })
    const [{ id }] = await query<{ id: number }>(store.db, sql`select id from a2_jobs where event_id = ${g.id}`)
    // A worker died right after the receiver got the post: its effect is DISPATCHED, its lease run out.
    received.set(`a2-${Number(id)}-post`, g.id)
    await query(store.db, sql`update a2_jobs set attempt = 1, owner = 'dead', lease_until = now() - interval '1 second' where id = ${id}`)
    await query(store.db, sql`insert into a2_effects (job_id, key, status, attempt, cancel_version) values (${id}, 'post', 'DISPATCHED', 1, 0)`)
    const posts = received.size
    await server.startWorker({ pollMs: 50 })
    await waitForJob(store, g.id, 'notify', (j) => j.status === 'COMPLETED')
    expect(received.size).toBe(posts)
    const [effect] = await query<{ status: string }>(store.db, sql`select status from a2_effects where job_id = ${id}`)
    expect(effect.status).toBe('DONE')
  })
})
