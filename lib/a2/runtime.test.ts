/**
 * The consumer runtime (lib/a2/README.md §2–4, 10), on PGlite and on Postgres, in one process:
 * the cancellation page's three samples, the claim and start boundaries, typed abort
 * reasons, a lease lapsing while the store is unreachable, every outcome rule, lanes,
 * and a leak guard over the whole file.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { performance } from 'node:perf_hooks'
import { sql } from 'drizzle-orm'
import {
  abortReason,
  consumer,
  createServer,
  NotRetryable,
  openPostgresStore,
  RunAborted,
  type A2Server,
  type Store,
  type Worker,
} from '@/lib/a2/server'
import { isA2Error } from '@/lib/a2'
import { endRuns, RETURNED } from './internal/runtime/end-runs'
import { query } from './internal/store/store'
import { decodeHint } from './internal/core/wire'
import { createTestDb, layers, POSTGRES_URL, type TestDb } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'
import { createLeakGuard, type LeakGuard } from './test-kit/guard'
import { startTcpProxy } from './test-kit/tcp-proxy'
import {
  Recorder,
  abortableWork,
  aborted,
  claimTicks,
  eventsOf,
  freezableStore,
  gate,
  type Gate,
  historyOf,
  holdableRenewals,
  interceptStore,
  isClaim,
  jobOf,
  quarantineOpenJobs,
  transitionsOf,
  waitForJob,
  waitUntil,
  type ClaimTicks,
  type Interceptor,
} from './test-kit/runtime'

describe.each(layers)('consumer runtime on %s', (kind) => {
  let testDb: TestDb
  let store: Store
  let guard: LeakGuard
  /** Servers a test created; their workers are stopped after each test. */
  let servers: Array<A2Server<typeof chat>> = []
  const cleanups: Array<() => Promise<void>> = []
  /** Gates a test's handlers wait on; opened after each test so a failed test leaves no run hanging. */
  const gates: Array<Gate<void>> = []
  const hold = (): Gate<void> => {
    const g = gate()
    gates.push(g)
    return g
  }

  beforeAll(async () => {
    guard = createLeakGuard()
    testDb = await createTestDb(kind)
    store = guard.store(await testDb.open())
  })

  afterEach(async () => {
    for (const g of gates.splice(0)) g.open()
    await Promise.all(servers.map((s) => s.stopWorkers({ graceMs: 0 })))
    servers = []
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
    await quarantineOpenJobs(store)
  })

  afterAll(async () => {
    try {
      await guard.check(kind === 'postgres' ? { closeStores: true, postgresUrl: POSTGRES_URL, database: new URL(testDb.url!).pathname.slice(1) } : {})
    } finally {
      await testDb.drop()
    }
  })

  /** A server on the file's store (or `on`), tracked for the worker stop and the leak guard. */
  function serve(consumers: Parameters<typeof createServer<typeof chat>>[0]['consumers'], on: Store = store) {
    const server = guard.server(createServer({ contract: chat, consumers, store: on }))
    servers.push(server)
    return server
  }
  /**
   * `serve` on a store that counts the worker's claims: "nothing more happens" is waited for
   * as `ticks.more()` (the worker looked at the queue again and acted on it), never slept.
   */
  function serveCounted(
    consumers: Parameters<typeof createServer<typeof chat>>[0]['consumers'],
    on: Store = store,
    interceptor: Interceptor = {},
  ): { server: A2Server<typeof chat>; ticks: ClaimTicks } {
    const ticks = claimTicks(on, interceptor)
    return { server: serve(consumers, ticks.store), ticks }
  }
  async function work(server: A2Server<typeof chat>, options: Parameters<A2Server['startWorker']>[0] = {}): Promise<Worker> {
    return guard.worker(await server.startWorker({ pollMs: 100, ...options }))
  }

  /**
   * A second store on the same database that the test can make unreachable. Postgres: a
   * TCP proxy between the driver and the server, frozen (bytes held, connections open);
   * PGlite (one in-process connection): every statement of this store is held.
   */
  async function unreachableStore(): Promise<{ store: Store; freeze(): void; thaw(): void }> {
    if (kind === 'postgres') {
      const proxy = await startTcpProxy(testDb.url!)
      const proxied = await openPostgresStore(proxy.url, { max: 4 })
      cleanups.push(async () => {
        proxy.thaw()
        await proxied.close()
        await proxy.close()
      })
      return { store: proxied, freeze: () => proxy.freeze(), thaw: () => proxy.thaw() }
    }
    const frozen = freezableStore(store)
    cleanups.push(async () => frozen.thaw())
    return { store: frozen, freeze: () => frozen.freeze(), thaw: () => frozen.thaw() }
  }

  describe('the cancellation page, its samples unchanged in shape', () => {
    it('abortOn list: a cancelled event fires the running generate’s signal with a typed CANCELLED reason', async () => {
      const seen = new Recorder()
      const generate = consumer({
        contract: chat,
        name: 'generate',
        types: ['generate'],
        abortOn: ['cancelled'],
      }).run(async (ctx) => {
        // your abortable work; hand it ctx.signal:
        seen.add('start', { id: ctx.event.id })
        try {
          await abortableWork(ctx.signal)
        } finally {
          seen.add('end', { reason: abortReason(ctx.signal) })
        }
      })
      const { server: chatServer, ticks } = serveCounted([generate])
      await work(chatServer)

      const { id: session } = await chatServer.sessions.create('u1')
      const [g] = await chatServer.append(session, { type: 'generate', payload: {} })
      await seen.waitFor('start')
      const appendedAt = performance.now()
      const [c] = await chatServer.append(session, { type: 'cancelled', payload: { of: g.id, lastSeenIndex: 0 } })
      const end = await seen.waitFor('end')

      const reason = end.reason as RunAborted
      expect(reason).toBeInstanceOf(RunAborted)
      expect(reason.code).toBe('CANCELLED')
      expect(reason.isCancel).toBe(true)
      expect(reason.event).toEqual({ id: c.id, index: c.index })
      expect(end.at - appendedAt).toBeLessThan(2_000) // on append, not at the next lease renewal (15 s)

      const job = await waitForJob(store, g.id, 'generate', (j) => j.status === 'CANCELLED')
      expect(job.attempt).toBe(1)
      expect(job.cancel_version).toBe(1)
      expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>CANCELLING:CANCEL_APPENDED', '1:CANCELLING>CANCELLED:STOPPED_BY_CANCEL'])
      await waitForJob(store, g.id, 'generate', (j) => j.due) // a retry, had one been scheduled, would be due
      await ticks.more() // and the worker has looked at the queue since
      expect(seen.count('start')).toBe(1) // a cancelled run never retries
      expect((await jobOf(store, g.id, 'generate'))!.attempt).toBe(1)
    })

    it('abortOn predicate: a cancel that names one of two running generations stops only that one', async () => {
      const seen = new Recorder()
      const release = hold()
      const generate = consumer({
        contract: chat,
        name: 'generate',
        types: ['generate'],
        abortOn: {
          // only the cancel that names this run fires the signal
          cancelled: (event, trigger) => event.payload.of === trigger.id,
        },
      }).run(async (ctx) => {
        seen.add('start', { id: ctx.event.id })
        try {
          await abortableWork(ctx.signal, release.promise)
          seen.add('finished', { id: ctx.event.id })
        } catch (error) {
          seen.add('aborted', { id: ctx.event.id, reason: abortReason(ctx.signal) })
          throw error
        }
      })
      // Cancel hints the worker has handled (its listeners run synchronously on each NOTIFY).
      const cancelHints: string[] = []
      const { server: chatServer } = serveCounted([generate], store, {
        notified: (payload) => {
          if (decodeHint(payload).cancels) cancelHints.push(payload)
        },
      })
      await work(chatServer)

      const { id: session } = await chatServer.sessions.create('u1')
      const [first] = await chatServer.append(session, { type: 'generate', payload: {} })
      const [second] = await chatServer.append(session, { type: 'generate', payload: {} })
      await seen.waitFor('start', (e) => e.id === first.id)
      await seen.waitFor('start', (e) => e.id === second.id)

      const [cancel] = await chatServer.append(session, { type: 'cancelled', payload: { of: first.id, lastSeenIndex: 1 } })
      const stopped = await seen.waitFor('aborted')
      expect(stopped.id).toBe(first.id)
      expect((stopped.reason as RunAborted).event).toEqual({ id: cancel.id, index: cancel.index })

      // The NOTIFY carrying the cancel was handled by the worker (its listeners run synchronously)
      // and everything it set off has run: had it named the second run, that run's signal would
      // have fired by now. The durable side (what a renewal would read) is checked just below.
      await waitUntil(() => cancelHints.some((h) => h.includes(cancel.id)), 'the cancel hint to reach the worker')
      await new Promise((resolve) => setImmediate(resolve))
      expect(seen.count('aborted', (e) => e.id === second.id)).toBe(0)
      const running = (await jobOf(store, second.id, 'generate'))!
      expect(running).toMatchObject({ status: 'ACTIVE', cancel_version: 0, attempt: 1 })

      release.open()
      await seen.waitFor('finished', (e) => e.id === second.id)
      expect((await waitForJob(store, first.id, 'generate', (j) => j.status === 'CANCELLED')).cancel_version).toBe(1)
      const done = await waitForJob(store, second.id, 'generate', (j) => j.status === 'COMPLETED')
      expect(await historyOf(store, done.id)).toEqual(['1:ACTIVE>COMPLETED:RETURNED'])
    })

    it('lane cleanup: the cancel fires the running generate’s signal on append; cleanup runs only after generate returned', async () => {
      const seen = new Recorder()
      const unwound = hold()
      const generation = consumer({
        contract: chat,
        name: 'generation',
        types: ['generate', 'cancelled'],
        lane: 'generation',
        abortOn: ['cancelled'],
      }).run(async (ctx) => {
        if (ctx.event.type === 'generate') {
          // your abortable work; hand it ctx.signal:
          seen.add('generate:start')
          await abortableWork(ctx.signal).catch(() => seen.add('generate:signal', { reason: abortReason(ctx.signal) }))
          await unwound.promise // still unwinding: the cleanup must wait for this
          seen.add('generate:returned')
          return
        }
        // your cleanup, after generate has returned
        seen.add('cleanup', { of: ctx.event.payload.of })
      })
      const { server: chatServer, ticks } = serveCounted([generation])
      await work(chatServer)

      const { id: session } = await chatServer.sessions.create('u1')
      const [g] = await chatServer.append(session, { type: 'generate', payload: {} })
      await seen.waitFor('generate:start')
      const appendedAt = performance.now()
      const [c] = await chatServer.append(session, { type: 'cancelled', payload: { of: g.id, lastSeenIndex: 0 } })

      const signal = await seen.waitFor('generate:signal')
      // The worker looks at the queue while generate unwinds: the cleanup job exists and is not started.
      await ticks.more()
      expect(seen.count('cleanup')).toBe(0)
      expect((await jobOf(store, c.id, 'generation'))!.attempt).toBe(0)
      unwound.open()
      const returned = await seen.waitFor('generate:returned')
      const cleanup = await seen.waitFor('cleanup')
      expect((signal.reason as RunAborted).code).toBe('CANCELLED')
      expect(signal.at - appendedAt).toBeLessThan(returned.at - appendedAt) // fired on append, while its own job waited
      expect(cleanup.at).toBeGreaterThanOrEqual(returned.at)
      expect(cleanup.of).toBe(g.id)
      expect(seen.entries.map((e) => e.what)).toEqual(['generate:start', 'generate:signal', 'generate:returned', 'cleanup'])

      const generateJob = await waitForJob(store, g.id, 'generation', (j) => j.status === 'CANCELLED')
      const cleanupJob = await waitForJob(store, c.id, 'generation', (j) => j.status === 'COMPLETED')
      const settledAt = (await transitionsOf(store, generateJob.id)).at(-1)!.at
      const cleanupDoneAt = (await transitionsOf(store, cleanupJob.id)).at(-1)!.at
      expect(new Date(cleanupDoneAt).getTime()).toBeGreaterThanOrEqual(new Date(settledAt).getTime())
    })
  })

  describe('the claim and start boundaries', () => {
    it('a cancel appended before any worker claimed the job: the handler is never invoked, CANCELLED_BEFORE_START', async () => {
      let invoked = 0
      const generate = consumer({ contract: chat, name: 'generate', types: ['generate'], abortOn: ['cancelled'] }).run(async () => {
        invoked++
      })
      const { server: chatServer, ticks } = serveCounted([generate])
      const { id: session } = await chatServer.sessions.create('u1')
      const [g] = await chatServer.append(session, { type: 'generate', payload: {} })
      await chatServer.append(session, { type: 'cancelled', payload: { of: g.id, lastSeenIndex: 0 } })
      expect((await jobOf(store, g.id, 'generate'))!.status).toBe('CANCELLING')

      const worker = await work(chatServer)
      const job = await waitForJob(store, g.id, 'generate', (j) => j.status === 'CANCELLED')
      expect(job.attempt).toBe(0)
      expect(await historyOf(store, job.id)).toEqual(['0:ACTIVE>CANCELLING:CANCEL_APPENDED', '0:CANCELLING>CANCELLED:CANCELLED_BEFORE_START'])
      await ticks.more() // the worker looked at the queue again after the run settled
      await waitUntil(() => worker.activeCount === 0, 'no attempt left running')
      expect(invoked).toBe(0)
      expect((await jobOf(store, g.id, 'generate'))!.attempt).toBe(0)
    })

    it('a cancel that lands between the claim and the start: the run is aborted at start, the handler never invoked', async () => {
      let invoked = 0
      const generate = consumer({ contract: chat, name: 'generate', types: ['generate'], abortOn: ['cancelled'] }).run(async () => {
        invoked++
      })
      const chatServer = serve([generate])
      const { id: session } = await chatServer.sessions.create('u1')
      let cancelled = false
      await work(chatServer, {
        hooks: {
          // The race seam: the claim has committed; the cancel commits before the handler would start.
          afterClaim: async (job) => {
            await chatServer.append(session, { type: 'cancelled', payload: { of: job.eventId, lastSeenIndex: 0 } })
            cancelled = true
          },
        },
      })
      const [g] = await chatServer.append(session, { type: 'generate', payload: {} })
      const job = await waitForJob(store, g.id, 'generate', (j) => j.status === 'CANCELLED')
      expect(cancelled).toBe(true)
      expect(job.attempt).toBe(1)
      expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>CANCELLING:CANCEL_APPENDED', '1:CANCELLING>CANCELLED:CANCELLED_BEFORE_START'])
      expect(invoked).toBe(0)
    })
  })

  describe('a lost claim', () => {
    it('lease lapses while the store is unreachable → CLAIM_EXPIRED locally; the successor’s claim fences every later write of the old attempt', async () => {
      const seen = new Recorder()
      const afterLapse = hold()
      const successorMayFinish = hold()
      const consumerOptions = { contract: chat, name: 'lapse', types: ['generate'] as const, leaseMs: 600 }
      const original = consumer(consumerOptions).run(async (ctx) => {
        seen.add('old:start', { attempt: ctx.attempt })
        seen.add('old:signal', { reason: await aborted(ctx.signal) })
        await afterLapse.promise
        const append = await ctx.append({ type: 'chunk', payload: { of: ctx.event.id, delta: 'old' } }).catch((e) => e)
        let dispatched = false
        const effect = await ctx
          .effect('notify', async () => {
            dispatched = true
          })
          .catch((e) => e)
        seen.add('old:writes', { append, effect, dispatched })
      })
      const successor = consumer(consumerOptions).run(async (ctx) => {
        seen.add('new:start', { attempt: ctx.attempt })
        await ctx.append({ type: 'chunk', payload: { of: ctx.event.id, delta: 'new' } })
        await successorMayFinish.promise
        await ctx.effect('notify', async (key) => key)
      })

      const unreachable = await unreachableStore()
      // pollMs: the old worker never reclaims on its own; only the successor claims.
      const oldServer = serve([original], unreachable.store)
      await work(oldServer, { pollMs: 60_000, concurrency: 1 }) // no claim of its own held by the freeze
      const newServer = serve([successor])

      const { id: session } = await newServer.sessions.create('u1')
      const [g] = await newServer.append(session, { type: 'generate', payload: {} })
      const started = await seen.waitFor('old:start')
      unreachable.freeze()
      const frozenAt = performance.now()

      const signal = await seen.waitFor('old:signal', undefined, 5_000)
      const reason = signal.reason as RunAborted
      expect(reason).toBeInstanceOf(RunAborted)
      expect(reason.code).toBe('CLAIM_EXPIRED')
      expect(reason.isLeaseLoss).toBe(true)
      // Decided from the local clock, while the store was unreachable: about one lease after the
      // claim (timers may run late on a loaded machine, never early).
      expect(signal.at).toBeGreaterThan(frozenAt)
      expect(signal.at - started.at).toBeLessThan(600 + 1_000)
      expect(await jobOf(store, g.id, 'lapse')).toMatchObject({ attempt: 1, status: 'ACTIVE' }) // nobody else acted yet

      await waitForJob(store, g.id, 'lapse', (j) => j.lease_lapsed)
      await work(newServer)
      await seen.waitFor('new:start')
      const held = (await jobOf(store, g.id, 'lapse'))!
      expect(held.attempt).toBe(2)

      // The old attempt comes back: every write it tries is rejected.
      unreachable.thaw()
      afterLapse.open()
      const writes = await seen.waitFor('old:writes')
      expect(isA2Error(writes.append, 'fenced')).toBe(true)
      expect(writes.effect).toBeInstanceOf(Error)
      expect(writes.dispatched).toBe(false)
      expect(await endRuns(store.db, [{ fence: { jobId: held.id, attempt: 1 }, rule: RETURNED }])).toEqual([undefined]) // row count 0

      successorMayFinish.open()
      const done = await waitForJob(store, g.id, 'lapse', (j) => j.status === 'COMPLETED')
      expect(done.attempt).toBe(2)
      const chunks = (await eventsOf(store, session)).filter((e) => e.type === 'chunk').map((e) => e.payload.delta)
      expect(chunks).toEqual(['new'])
      // Nothing of attempt 1 was ever settled; the successor's effect dispatched (not poisoned by the old attempt).
      expect(await historyOf(store, done.id)).toEqual(['1:ACTIVE>ACTIVE:LEASE_EXPIRED', '2:ACTIVE>COMPLETED:RETURNED'])
      const [effect] = await query<{ status: string; attempt: number }>(
        store.db,
        sql`select status, attempt from a2_effects where job_id = ${done.id} and key = 'notify'`,
      )
      expect(effect).toEqual({ status: 'DONE', attempt: 2 })
    })

    it('renewal that finds another attempt holding the job fires SUPERSEDED_ATTEMPT', async () => {
      const seen = new Recorder()
      const consumerOptions = { contract: chat, name: 'superseded', types: ['generate'] as const, leaseMs: 3_000 }
      const first = consumer(consumerOptions).run(async (ctx) => {
        seen.add('first:signal', { reason: await aborted(ctx.signal) })
        const append = await ctx.append({ type: 'chunk', payload: { of: ctx.event.id, delta: 'first' } }).catch((e) => e)
        seen.add('first:append', { append })
      })
      const second = consumer(consumerOptions).run(async (ctx) => {
        seen.add('second:start', { attempt: ctx.attempt })
        await ctx.append({ type: 'chunk', payload: { of: ctx.event.id, delta: 'second' } })
      })
      // The first worker's renewals can be held back (a stalled renewal path); the rest of its traffic flows.
      const renewals = holdableRenewals(store)
      cleanups.push(async () => renewals.release())
      const firstServer = serve([first], renewals.store)
      await work(firstServer, { pollMs: 60_000, concurrency: 1 }) // only the second server may take the job over
      const { id: session } = await firstServer.sessions.create('u1')
      const [g] = await firstServer.append(session, { type: 'generate', payload: {} })
      const job = await waitForJob(store, g.id, 'superseded', (j) => j.attempt === 1)

      await renewals.hold()
      // The database's view of the lease ends first (a stalled renewal, a skewed clock) and a successor claims.
      await query(store.db, sql`update a2_jobs set lease_until = now() - interval '1 second' where id = ${job.id}`)
      await work(serve([second]))
      await seen.waitFor('second:start')
      expect(seen.count('first:signal')).toBe(0)
      renewals.release()
      const signal = await seen.waitFor('first:signal', undefined, 3_000)
      expect((signal.reason as RunAborted).code).toBe('SUPERSEDED_ATTEMPT')
      const append = (await seen.waitFor('first:append')).append
      expect(isA2Error(append, 'fenced')).toBe(true)

      const done = await waitForJob(store, g.id, 'superseded', (j) => j.status === 'COMPLETED')
      expect(done.attempt).toBe(2)
      expect((await eventsOf(store, session)).filter((e) => e.type === 'chunk').map((e) => e.payload.delta)).toEqual(['second'])
      expect(await historyOf(store, done.id)).toEqual(['1:ACTIVE>ACTIVE:LEASE_EXPIRED', '2:ACTIVE>COMPLETED:RETURNED'])
    })

    it('a worker that reclaims its own lapsed job keeps tracking the new attempt while the old one unwinds', async () => {
      const seen = new Recorder()
      const releaseOld = hold()
      const releaseNew = hold()
      const c = consumer({ contract: chat, name: 'reclaim', types: ['generate'], abortOn: ['cancelled'], leaseMs: 3_000 }).run(async (ctx) => {
        seen.add('start', { attempt: ctx.attempt })
        if (ctx.attempt === 1) {
          seen.add('old:signal', { reason: await aborted(ctx.signal) })
          await releaseOld.promise
          seen.add('old:returned')
          return
        }
        seen.add('new:signal', { reason: await aborted(ctx.signal) })
        await releaseNew.promise
      })
      const wake = consumer({ contract: chat, name: 'reclaim-wake', types: ['message'] }).run(async () => {})
      const renewals = holdableRenewals(store)
      cleanups.push(async () => renewals.release())
      const { server, ticks } = serveCounted([c, wake], renewals.store)
      const worker = await work(server, { pollMs: 60_000 })
      const { id: session } = await server.sessions.create('u1')
      const [g] = await server.append(session, { type: 'generate', payload: {} })
      const { id: jobId } = await waitForJob(store, g.id, 'reclaim', (j) => j.attempt === 1)
      await seen.waitFor('start', (e) => e.attempt === 1)
      // Attempt 1's renewals stall and the database's view of its lease ends.
      await renewals.hold()
      await query(store.db, sql`update a2_jobs set lease_until = now() - interval '1 second' where id = ${jobId}`)
      // A new job wakes the worker: it claims the lapsed job again (attempt 2) while attempt 1 still runs.
      await server.append(session, { type: 'message', payload: { text: 'wake up' } })
      await seen.waitFor('start', (e) => e.attempt === 2)
      renewals.release() // attempt 1 learns it was superseded and unwinds
      expect(((await seen.waitFor('old:signal')).reason as RunAborted).code).toBe('SUPERSEDED_ATTEMPT')
      releaseOld.open()
      await seen.waitFor('old:returned')
      // Its (fenced, refused) completion is done: a finished attempt leaves the worker's books
      // and then wakes the claim loop (pollMs is 60 s: nothing else makes it claim here).
      await ticks.more(1)
      await waitUntil(() => worker.activeCount <= 1, 'attempt 1 to leave the books')
      expect(worker.activeCount).toBe(1) // attempt 2 still runs and is still tracked

      const [cancel] = await server.append(session, { type: 'cancelled', payload: { of: g.id, lastSeenIndex: 0 } })
      const signal = await seen.waitFor('new:signal', undefined, 2_000)
      expect((signal.reason as RunAborted).event).toEqual({ id: cancel.id, index: cancel.index })
      releaseNew.open()
      const job = await waitForJob(store, g.id, 'reclaim', (j) => j.status === 'CANCELLED')
      expect(job.attempt).toBe(2)
    })
  })

  describe('outcomes (lib/a2/README.md §4)', () => {
    /** Runs attempt 1 until its lease lapses while the store is unreachable, then lets `then` decide. */
    async function lapse(name: string, then: 'return' | 'throw') {
      const seen = new Recorder()
      const c = consumer({ contract: chat, name, types: ['generate'], leaseMs: 600 }).run(async (ctx) => {
        seen.add('start', { attempt: ctx.attempt })
        if (ctx.attempt > 1) return
        seen.add('signal', { reason: await aborted(ctx.signal) })
        await waitUntil(() => !frozen, 'the store back')
        seen.add(then)
        if (then === 'throw') throw ctx.signal.reason
      })
      let frozen = false
      const unreachable = await unreachableStore()
      const server = serve([c], unreachable.store)
      // concurrency 1: with a free slot the worker sends another claim right after the first;
      // held by the freeze, it would reach the database after the lapse and take the job over
      // (a legitimate successor, but not the outcome these tests pin down).
      await work(server, { pollMs: 60_000, concurrency: 1 })
      const { id: session } = await server.sessions.create('u1')
      const [g] = await server.append(session, { type: 'generate', payload: {} })
      await seen.waitFor('start')
      unreachable.freeze()
      frozen = true
      const signal = await seen.waitFor('signal', undefined, 5_000)
      expect((signal.reason as RunAborted).code).toBe('CLAIM_EXPIRED')
      await waitForJob(store, g.id, name, (j) => j.lease_lapsed)
      unreachable.thaw()
      frozen = false
      return { seen, g, session }
    }

    it('return → COMPLETED', async () => {
      const c = consumer({ contract: chat, name: 'returns', types: ['generate'] }).run(async (ctx) => {
        await ctx.append({ type: 'chunk', payload: { of: ctx.event.id, delta: 'hi' } })
      })
      const server = serve([c])
      await work(server)
      const { id: session } = await server.sessions.create('u1')
      const [g] = await server.append(session, { type: 'generate', payload: {} })
      const job = await waitForJob(store, g.id, 'returns', (j) => j.status === 'COMPLETED')
      expect(job).toMatchObject({ attempt: 1, owner: null, lease_until: null })
      expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>COMPLETED:RETURNED'])
    })

    it('an attempt starts from what its claim returned: the trigger event and the job are not read again (one statement per no-op job, bench figure 4)', async () => {
      const reads: string[] = []
      const counted = interceptStore(store, {
        before: (text) => {
          if (/(from|join) a2_events/.test(text) && !isClaim(text)) reads.push(text)
        },
      })
      const events: unknown[] = []
      const plain = consumer({ contract: chat, name: 'from-claim', types: ['generate'] }).run(async (ctx) => {
        events.push(ctx.event)
      })
      const appender = serve([plain]) // appends on the plain store: only the worker's statements are counted
      await work(serve([plain], counted))
      const { id: session } = await appender.sessions.create('u1')
      const [g] = await appender.append(session, { type: 'generate', payload: {} })
      await waitForJob(store, g.id, 'from-claim', (j) => j.status === 'COMPLETED')
      expect(events).toEqual([g])
      expect(reads).toEqual([])
    })

    it('a first attempt that called no ctx.effect settles without reading effects; one that did reconciles first', async () => {
      const reads: string[] = []
      const counted = interceptStore(store, {
        before: (text) => {
          if (text.includes('from a2_effects where job_id') && text.includes("'DISPATCHED'")) reads.push(text)
        },
      })
      const plain = consumer({ contract: chat, name: 'no-effects', types: ['generate'] }).run(async () => {})
      const effectful = consumer({ contract: chat, name: 'one-effect', types: ['generate'] }).run(async (ctx) => {
        await ctx.effect('tool', async () => 'x')
      })
      const server = serve([plain], counted)
      await work(server)
      const { id: session } = await server.sessions.create('u1')
      const [g] = await server.append(session, { type: 'generate', payload: {} })
      await waitForJob(store, g.id, 'no-effects', (j) => j.status === 'COMPLETED')
      expect(reads).toEqual([])
      await server.stopWorkers({ graceMs: 0 })
      const other = serve([effectful], counted)
      await work(other)
      const [h] = await other.append(session, { type: 'generate', payload: {} })
      await waitForJob(store, h.id, 'one-effect', (j) => j.status === 'COMPLETED')
      expect(reads).toHaveLength(1)
    })

    it('return after the lease lapsed, with no successor → COMPLETED', async () => {
      const { seen, g } = await lapse('lapsed-returns', 'return')
      const job = await waitForJob(store, g.id, 'lapsed-returns', (j) => j.status === 'COMPLETED')
      expect(job.attempt).toBe(1)
      expect(seen.count('start')).toBe(1)
      expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>COMPLETED:RETURNED'])
    })

    it('throw after a lease abort → SURRENDERED: the attempt is spent and the job immediately reclaimable', async () => {
      const { seen, g } = await lapse('lapsed-throws', 'throw')
      const thrown = await seen.waitFor('throw')
      const second = await seen.waitFor('start', (e) => e.attempt === 2)
      expect(second.at - thrown.at).toBeLessThan(1_000) // no backoff, no lease wait
      const job = await waitForJob(store, g.id, 'lapsed-throws', (j) => j.status === 'COMPLETED')
      expect(job.attempt).toBe(2)
      const history = await transitionsOf(store, job.id)
      expect(history.map((t) => `${t.attempt}:${t.from_status}>${t.to_status}:${t.reason}`)).toEqual([
        '1:ACTIVE>ACTIVE:SURRENDERED',
        '2:ACTIVE>COMPLETED:RETURNED',
      ])
      expect(history[0].detail).toEqual({ code: 'CLAIM_EXPIRED' })
    })

    it.each(['return', 'throw'] as const)('after an abortOn abort, %s → CANCELLED, never retried', async (then) => {
      const seen = new Recorder()
      const c = consumer({ contract: chat, name: `cancel-${then}`, types: ['generate'], abortOn: ['cancelled'], maxAttempts: 3 }).run(async (ctx) => {
        seen.add('start', { attempt: ctx.attempt })
        try {
          await abortableWork(ctx.signal)
        } catch (error) {
          if (then === 'throw') throw error
        }
      })
      const { server, ticks } = serveCounted([c])
      await work(server)
      const { id: session } = await server.sessions.create('u1')
      const [g] = await server.append(session, { type: 'generate', payload: {} })
      await seen.waitFor('start')
      await server.append(session, { type: 'cancelled', payload: { of: g.id, lastSeenIndex: 0 } })
      const job = await waitForJob(store, g.id, `cancel-${then}`, (j) => j.status === 'CANCELLED')
      await waitForJob(store, g.id, `cancel-${then}`, (j) => j.due) // a retry, had one been scheduled, would be due
      await ticks.more() // and the worker has looked at the queue since
      expect(seen.count('start')).toBe(1)
      expect((await jobOf(store, g.id, `cancel-${then}`))!.attempt).toBe(1)
      expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>CANCELLING:CANCEL_APPENDED', '1:CANCELLING>CANCELLED:STOPPED_BY_CANCEL'])
    })

    it('any other throw → retried with backoff up to maxAttempts, then FAILED and an a2.failed event with the attempts', async () => {
      const seen = new Recorder()
      const c = consumer({ contract: chat, name: 'flaky', types: ['generate'], maxAttempts: 3 }).run(async (ctx) => {
        seen.add('start', { attempt: ctx.attempt })
        throw new Error(`boom ${ctx.attempt}`)
      })
      const { server, ticks } = serveCounted([c])
      await work(server)
      const { id: session } = await server.sessions.create('u1')
      const [g] = await server.append(session, { type: 'generate', payload: {} })
      const job = await waitForJob(store, g.id, 'flaky', (j) => j.status === 'FAILED')
      expect(job.attempt).toBe(3)

      const starts = seen.all('start')
      expect(starts.map((s) => s.attempt)).toEqual([1, 2, 3])
      // Backoff with jitter: at least half of 250 ms, then of 500 ms.
      expect(starts[1].at - starts[0].at).toBeGreaterThanOrEqual(125 - 5)
      expect(starts[2].at - starts[1].at).toBeGreaterThanOrEqual(250 - 5)

      const history = await transitionsOf(store, job.id)
      expect(history.map((t) => `${t.attempt}:${t.reason}`)).toEqual(['1:RETRY_SCHEDULED', '2:RETRY_SCHEDULED', '3:ATTEMPTS_EXHAUSTED'])
      expect(history[0].detail).toMatchObject({ error: { message: 'boom 1' } })

      const failed = (await eventsOf(store, session)).filter((e) => e.type === 'a2.failed')
      expect(failed).toHaveLength(1)
      expect(failed[0].payload).toEqual({ of: g.id, consumer: 'flaky', attempts: 3, error: { message: 'boom 3' } })
      await waitForJob(store, g.id, 'flaky', (j) => j.due) // a fourth try, had one been scheduled, would be due
      await ticks.more() // and the worker has looked at the queue since
      expect(seen.count('start')).toBe(3)
      expect((await jobOf(store, g.id, 'flaky'))!.attempt).toBe(3)
    })

    it('a NotRetryable throw → FAILED at once, whatever attempts were left: one start, an a2.failed with its message and code', async () => {
      const seen = new Recorder()
      const c = consumer({ contract: chat, name: 'refused', types: ['generate'], maxAttempts: 3 }).run(async (ctx) => {
        seen.add('start', { attempt: ctx.attempt })
        throw new NotRetryable('the server refused the request (400)', { code: 'http_400', cause: new Error('bad request') })
      })
      const { server, ticks } = serveCounted([c])
      await work(server)
      const { id: session } = await server.sessions.create('u1')
      const [g] = await server.append(session, { type: 'generate', payload: {} })
      const job = await waitForJob(store, g.id, 'refused', (j) => j.status === 'FAILED')
      expect(job.attempt).toBe(1)
      const history = await transitionsOf(store, job.id)
      expect(history.map((t) => `${t.attempt}:${t.reason}`)).toEqual(['1:NOT_RETRYABLE'])
      const failed = (await eventsOf(store, session)).filter((e) => e.type === 'a2.failed')
      expect(failed.map((e) => e.payload)).toEqual([
        { of: g.id, consumer: 'refused', attempts: 1, error: { message: 'the server refused the request (400)', code: 'http_400' } },
      ])
      await ticks.more() // the worker has looked at the queue since: no second attempt was scheduled
      expect(seen.count('start')).toBe(1)
    })

    it('a cancel while a retry waits revokes it (recorded), and the handler is not run again', async () => {
      const seen = new Recorder()
      const c = consumer({ contract: chat, name: 'revoked', types: ['generate'], abortOn: ['cancelled'], maxAttempts: 3 }).run(async (ctx) => {
        seen.add('start', { attempt: ctx.attempt })
        throw new Error('transient')
      })
      const { server, ticks } = serveCounted([c])
      await work(server)
      const { id: session } = await server.sessions.create('u1')
      const [g] = await server.append(session, { type: 'generate', payload: {} })
      const job = await waitForJob(store, g.id, 'revoked', (j) => j.attempt === 1 && j.owner === null)
      await server.append(session, { type: 'cancelled', payload: { of: g.id, lastSeenIndex: 0 } })
      await waitForJob(store, g.id, 'revoked', (j) => j.status === 'CANCELLED')
      await waitForJob(store, g.id, 'revoked', (j) => j.due) // the revoked retry's time has come
      await ticks.more() // and the worker has looked at the queue since
      expect(seen.count('start')).toBe(1)
      expect((await jobOf(store, g.id, 'revoked'))!.attempt).toBe(1)
      expect(await historyOf(store, job.id)).toEqual([
        '1:ACTIVE>ACTIVE:RETRY_SCHEDULED',
        '1:ACTIVE>CANCELLING:CANCEL_APPENDED',
        '1:CANCELLING>CANCELLED:RETRY_REVOKED',
      ])
    })

    it('stop() aborts in-flight runs with SHUTDOWN, surrenders them with the attempt refunded, and leaves no timer behind', async () => {
      const seen = new Recorder()
      const c = consumer({ contract: chat, name: 'shutdown', types: ['generate'] }).run(async (ctx) => {
        seen.add('start')
        await abortableWork(ctx.signal)
      })
      const server = serve([c])
      const worker = await work(server)
      const { id: session } = await server.sessions.create('u1')
      const [g] = await server.append(session, { type: 'generate', payload: {} })
      await seen.waitFor('start')
      await server.stopWorkers({ graceMs: 50 })
      expect(worker.activeCount).toBe(0)
      const job = (await jobOf(store, g.id, 'shutdown'))!
      // Not the run's fault: the attempt is refunded by raising the budget (the attempt
      // number, the fencing token, is never reused).
      expect(job).toMatchObject({ status: 'ACTIVE', attempt: 1, owner: null, max_attempts: 4 })
      expect(await transitionsOf(store, job.id)).toMatchObject([{ reason: 'SURRENDERED', detail: { code: 'SHUTDOWN' } }])
      expect(guard.pendingTimers()).toEqual([])
    })
  })

  describe('lanes', () => {
    it('runs one session’s lane one job at a time, in log order', async () => {
      const seen = new Recorder()
      const finish = Array.from({ length: 5 }, () => hold())
      const c = consumer({ contract: chat, name: 'laned', types: ['message'], lane: 'l' }).run(async (ctx) => {
        seen.add('start', { index: ctx.event.index })
        await finish[ctx.event.index].promise // runs until the test lets it end
        seen.add('end', { index: ctx.event.index })
      })
      const { server, ticks } = serveCounted([c])
      await work(server)
      const { id: session } = await server.sessions.create('u1')
      await server.append(session, ...Array.from({ length: 5 }, (_, i) => ({ type: 'message' as const, payload: { text: `m${i}` } })))
      for (let i = 0; i < 5; i++) {
        await seen.waitFor('start', (e) => e.index === i)
        await ticks.more() // the worker looks at the queue while job i runs: nothing else of the lane starts
        expect(seen.count('start')).toBe(i + 1)
        finish[i].open()
      }
      await waitUntil(() => seen.count('end') === 5, 'five runs')
      expect(seen.entries.map((e) => `${e.what}${e.index}`)).toEqual([
        'start0',
        'end0',
        'start1',
        'end1',
        'start2',
        'end2',
        'start3',
        'end3',
        'start4',
        'end4',
      ])
    })

    it('a stuck lane holds only its own session: other sessions’ lanes and lane-less jobs run', async () => {
      const seen = new Recorder()
      const unstick = hold()
      const laned = consumer({ contract: chat, name: 'stuck-lane', types: ['message'], lane: 'l' }).run(async (ctx) => {
        seen.add('start', { session: ctx.sessionId, text: ctx.event.payload.text })
        if (ctx.event.payload.text === 'stuck') await unstick.promise
      })
      const free = consumer({ contract: chat, name: 'no-lane', types: ['message'] }).run(async (ctx) => {
        seen.add('free', { session: ctx.sessionId })
      })
      const { server, ticks } = serveCounted([laned, free])
      await work(server)
      const { id: s1 } = await server.sessions.create('u1')
      const { id: s2 } = await server.sessions.create('u1')
      await server.append(s1, { type: 'message', payload: { text: 'stuck' } }, { type: 'message', payload: { text: 'behind' } })
      await seen.waitFor('start', (e) => e.text === 'stuck')
      await server.append(s2, { type: 'message', payload: { text: 'other' } })
      await seen.waitFor('start', (e) => e.session === s2)
      await seen.waitFor('free', (e) => e.session === s1)
      await seen.waitFor('free', (e) => e.session === s2)
      await ticks.more() // the worker has looked at the queue again: 'behind' is still held by its lane
      expect(seen.count('start', (e) => e.text === 'behind')).toBe(0)
      unstick.open()
      await seen.waitFor('start', (e) => e.text === 'behind')
      expect(seen.all('start').map((e) => e.text)).toEqual(['stuck', 'other', 'behind'])
    })
  })

  describe('wake-ups', () => {
    it('a job appended while the worker’s claim is in flight still starts at once (no lost wake-up)', async () => {
      const seen = new Recorder()
      const c = consumer({ contract: chat, name: 'wakeup', types: ['generate'] }).run(async () => {
        seen.add('start')
      })
      // The appending side also routes `message` to a consumer the watched worker does not serve:
      // appending one wakes that worker for a claim that finds nothing of its own.
      const other = consumer({ contract: chat, name: 'wakeup-other', types: ['message'] }).run(async () => {})
      const server = serve([c, other])
      const { id: session } = await server.sessions.create('u1')
      let armed = false
      let appendedAt = 0
      /** New-job hints the watched worker has handled (its listeners run synchronously on each NOTIFY). */
      let jobHints = 0
      const { server: watchedServer, ticks } = serveCounted([c], store, {
        notified: (payload) => {
          if (decodeHint(payload).newJobs) jobHints++
        },
        after: async (text) => {
          if (!armed || !text.includes('with candidates')) return
          armed = false
          // The claim found nothing; before the worker sees that, a job is appended and its NOTIFY lands.
          const hintsBefore = jobHints
          await server.append(session, { type: 'generate', payload: {} })
          appendedAt = performance.now()
          await waitUntil(() => jobHints > hintsBefore, 'the new job’s NOTIFY to reach the watched worker')
        },
      })
      await work(watchedServer, { pollMs: 60_000 })
      await waitUntil(() => ticks.finished >= 1, 'the worker’s first claim (it then sleeps: pollMs is 60 s)')
      armed = true
      // Wake the sleeping worker so it claims (and finds nothing: the job is appended during the claim).
      await server.append(session, { type: 'message', payload: { text: 'tick' } })
      const start = await seen.waitFor('start', undefined, 5_000)
      expect(appendedAt).toBeGreaterThan(0)
      expect(start.at - appendedAt).toBeLessThan(1_000)
    })

    it('with every NOTIFY lost, jobs still run (bounded polling) and a cancel still reaches the run (renewal)', async () => {
      const seen = new Recorder()
      const c = consumer({ contract: chat, name: 'deaf', types: ['generate'], abortOn: ['cancelled'], leaseMs: 900 }).run(async (ctx) => {
        seen.add('start')
        seen.add('signal', { reason: await aborted(ctx.signal) })
      })
      const deaf = interceptStore(store, { dropNotifications: () => true })
      const server = serve([c], deaf)
      await work(server, { pollMs: 200 })
      const { id: session } = await server.sessions.create('u1')
      const [g] = await server.append(session, { type: 'generate', payload: {} })
      await seen.waitFor('start', undefined, 3_000)
      const [cancel] = await server.append(session, { type: 'cancelled', payload: { of: g.id, lastSeenIndex: 0 } })
      const signal = await seen.waitFor('signal', undefined, 3_000)
      expect((signal.reason as RunAborted).code).toBe('CANCELLED')
      expect((signal.reason as RunAborted).event).toEqual({ id: cancel.id, index: cancel.index })
      const job = await waitForJob(store, g.id, 'deaf', (j) => j.status === 'CANCELLED')
      expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>CANCELLING:CANCEL_APPENDED', '1:CANCELLING>CANCELLED:STOPPED_BY_CANCEL'])
    })

    it('a plain throw after a cancel landed during the attempt ends CANCELLED whether or not the NOTIFY arrived', async () => {
      let calls = 0
      let signalled: boolean | undefined
      const c = consumer({ contract: chat, name: 'throws-after-cancel', types: ['generate'], abortOn: ['cancelled'], maxAttempts: 3 }).run(
        async (ctx) => {
          calls++
          await appender.append(ctx.sessionId, { type: 'cancelled', payload: { of: ctx.event.id, lastSeenIndex: 0 } })
          signalled = ctx.signal.aborted
          throw new Error('failed after the cancel landed')
        },
      )
      const appender = serve([c])
      const { server, ticks } = serveCounted([c], store, { dropNotifications: () => true })
      await work(server)
      const { id: session } = await server.sessions.create('u1')
      const [g] = await server.append(session, { type: 'generate', payload: {} })
      const job = await waitForJob(store, g.id, 'throws-after-cancel', (j) => j.status === 'CANCELLED')
      await waitForJob(store, g.id, 'throws-after-cancel', (j) => j.due) // a retry, had one been scheduled, would be due
      await ticks.more() // and the worker has looked at the queue since
      expect(calls).toBe(1)
      expect((await jobOf(store, g.id, 'throws-after-cancel'))!.attempt).toBe(1)
      expect(signalled).toBe(false) // its hint was lost: only the durable state knew
      const history = await transitionsOf(store, job.id)
      expect(history.map((t) => `${t.attempt}:${t.from_status}>${t.to_status}:${t.reason}`)).toEqual([
        '1:ACTIVE>CANCELLING:CANCEL_APPENDED',
        '1:CANCELLING>CANCELLED:STOPPED_BY_CANCEL',
      ])
      expect(history[1].detail).toMatchObject({ retryRevoked: true, error: { message: 'failed after the cancel landed' } })
    })

    it('a renewal still in flight when a run ends arms no timer afterwards', async () => {
      const renewalSent = hold()
      const answerRenewals = hold()
      let renewalsAnswered = 0
      const c = consumer({ contract: chat, name: 'slow-renewal', types: ['generate'], leaseMs: 600 }).run(async () => {
        await renewalSent.promise // a renewal (every 200 ms) is in flight when this returns
      })
      // Renewals succeed in the database but their answers come back late: once the run is over.
      const isRenewal = (text: string) => text.startsWith('update a2_jobs set lease_until')
      const slowRenewals = interceptStore(store, {
        before: (text) => {
          if (isRenewal(text)) renewalSent.open()
        },
        after: async (text) => {
          if (!isRenewal(text)) return
          await answerRenewals.promise
          renewalsAnswered++
        },
      })
      const server = serve([c], slowRenewals)
      const worker = await work(server, { pollMs: 60_000 })
      const { id: session } = await server.sessions.create('u1')
      const [g] = await server.append(session, { type: 'generate', payload: {} })
      await waitForJob(store, g.id, 'slow-renewal', (j) => j.status === 'COMPLETED')
      await waitUntil(() => worker.activeCount === 0, 'the run to end')
      expect(renewalsAnswered).toBe(0) // the renewal is still out
      answerRenewals.open()
      await waitUntil(() => renewalsAnswered > 0, 'the delayed renewal to come back')
      await new Promise((resolve) => setImmediate(resolve)) // and its caller to have handled the answer
      // The worker's own poll timer is legitimately pending; the run's lease timers are not.
      expect(guard.pendingTimers().filter((t) => /armExpiry|startAttempt/.test(t))).toEqual([])
    })
  })
})

describe('consumer definitions', () => {
  it.each([
    ['a type the contract lacks', { types: ['nope'] }, /"nope" is not an event type/],
    ['an abortOn type the contract lacks', { abortOn: ['nope'] }, /abortOn "nope"/],
    ['an abortOn predicate that is not a function', { abortOn: { cancelled: true } }, /must be a predicate/],
    ['maxAttempts 0 (a job nobody could claim or fail)', { maxAttempts: 0 }, /maxAttempts/],
    ['a lease shorter than a round trip', { leaseMs: 10 }, /leaseMs/],
    ['no types', { types: [] }, /handles no event types/],
  ])('refuses %s', (_, override, message) => {
    expect(() => consumer({ contract: chat, name: 'x', types: ['generate'], ...(override as object) } as never)).toThrow(message)
  })
})
