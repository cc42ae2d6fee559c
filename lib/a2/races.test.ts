/**
 * The race table of the cancellation-contract article, one test per row that fits one
 * process, on PGlite and on Postgres. Each injects its failure deterministically and
 * asserts safety (no unauthorized effect, no lost cancel) and evidence (the rows an
 * operator reads later). The rows where a process must die are in races.multiprocess.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { consumer, createServer, type A2Server, type Store, type WorkerOptions } from '@/lib/a2/server'
import { query } from './internal/store'
import { createTestDb, layers, type TestDb } from '@/test/db'
import { testContract as chat } from '@/test/contract'
import { delay, freezableStore, gate, historyOf, quarantineOpenJobs, waitForJob, waitUntil } from '@/test/runtime'

type Handler = Parameters<ReturnType<typeof consumer<typeof chat, 'generate'>>['run']>[0]

describe.each(layers)('the race table on %s', (kind) => {
  let testDb: TestDb
  let store: Store
  let servers: Array<A2Server<typeof chat>> = []

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    store = await testDb.open()
  })
  afterEach(async () => {
    await Promise.all(servers.map((s) => s.stopWorkers({ graceMs: 0 })))
    servers = []
    await quarantineOpenJobs(store)
  })
  afterAll(async () => {
    await testDb.drop()
  })

  let n = 0
  /** A server with one consumer of `generate` (abortOn cancelled) under a fresh name, and a worker. */
  async function setup(
    handler: Handler,
    options: { maxAttempts?: number; leaseMs?: number; worker?: WorkerOptions; on?: Store; start?: boolean } = {},
  ) {
    const name = `race${++n}`
    const c = consumer({
      contract: chat,
      name,
      types: ['generate'],
      abortOn: ['cancelled'],
      maxAttempts: options.maxAttempts ?? 3,
      leaseMs: options.leaseMs ?? 10_000,
    }).run(handler)
    const server = createServer({ contract: chat, consumers: [c], store: options.on ?? store })
    servers.push(server)
    const { id: sessionId } = await server.sessions.create('u')
    if (options.start !== false) await server.startWorker({ pollMs: 50, graceMs: 400, ...options.worker })
    const [generate] = await server.append(sessionId, { type: 'generate', payload: {} })
    const cancel = () => server.append(sessionId, { type: 'cancelled', payload: { of: generate.id, lastSeenIndex: 0 } })
    return { name, server, sessionId, generate, cancel }
  }

  const effectsOf = (jobId: number) =>
    query<{ key: string; status: string; attempt: number; cancel_version: number }>(
      store.db,
      sql`select key, status, attempt, cancel_version from a2_effects where job_id = ${jobId} order by key`,
    )

  it('cancel between claim and dispatch: no dispatch, CANCELLED_BEFORE_DISPATCH recorded', async () => {
    const claimed = gate()
    const proceed = gate()
    let dispatched = 0
    const { name, generate, cancel } = await setup(async (ctx) => {
      claimed.open()
      await proceed.promise // a worker that does not look at its signal
      await ctx.effect('tool', async () => {
        dispatched++
      })
    })
    await claimed.promise
    await cancel()
    proceed.open()
    const job = await waitForJob(store, generate.id, name, (j) => j.status === 'CANCELLED')
    expect(dispatched).toBe(0)
    expect(await effectsOf(job.id)).toEqual([{ key: 'tool', status: 'CANCELLED_BEFORE_DISPATCH', attempt: 1, cancel_version: 0 }])
    expect(await historyOf(store, job.id)).toEqual(['1:ACTIVE>CANCELLING:CANCEL_APPENDED', '1:CANCELLING>CANCELLED:STOPPED_BY_CANCEL'])
  })

  it('worker pauses after its state check and a cancel lands: the stale version is rejected at dispatch', async () => {
    let dispatched = 0
    let setupDone!: Awaited<ReturnType<typeof setup>>
    const paused = gate()
    setupDone = await setup(
      async (ctx) => {
        await ctx.effect('tool', async () => {
          dispatched++
        })
      },
      {
        worker: {
          hooks: {
            // The worker has read the run's state (ACTIVE, version 0); the cancel lands now.
            beforeDispatch: async () => {
              await paused.promise
              await setupDone.cancel()
            },
          },
        },
      },
    )
    paused.open()
    const job = await waitForJob(store, setupDone.generate.id, setupDone.name, (j) => j.status === 'CANCELLED')
    expect(dispatched).toBe(0)
    expect(job.cancel_version).toBe(1)
    // The effect carries the version the worker observed (0): stale against the run's 1.
    expect(await effectsOf(job.id)).toEqual([{ key: 'tool', status: 'CANCELLED_BEFORE_DISPATCH', attempt: 1, cancel_version: 0 }])
  })

  it('retry timer fires after cancel: the retry is rejected and recorded', async () => {
    let calls = 0
    const { name, server, generate, cancel } = await setup(
      async () => {
        calls++
        throw new Error('transient upstream error')
      },
      { maxAttempts: 5 },
    )
    const job = await waitForJob(store, generate.id, name, (j) => j.attempt === 1 && j.owner === null)
    // The retry is scheduled; stop the worker so its timer cannot win the race, then cancel.
    await server.stopWorkers({ graceMs: 0 })
    await cancel()
    await delay(400) // the backoff (≤ 250 ms for attempt 1) has expired: the retry is due
    await server.startWorker({ pollMs: 50 })
    await waitForJob(store, generate.id, name, (j) => j.status === 'CANCELLED')
    await delay(200)
    expect(calls).toBe(1)
    expect(await historyOf(store, job.id)).toEqual([
      '1:ACTIVE>ACTIVE:RETRY_SCHEDULED',
      '1:ACTIVE>CANCELLING:CANCEL_APPENDED',
      '1:CANCELLING>CANCELLED:RETRY_REVOKED',
    ])
  })

  it('a cancel that lands while the attempt fails revokes its retry (compare-and-set at scheduling)', async () => {
    let calls = 0
    let cancelNow!: () => Promise<unknown>
    const { name, generate, cancel } = await setup(async () => {
      calls++
      await cancelNow()
      throw new Error('failed after the cancel landed')
    })
    cancelNow = cancel
    const job = await waitForJob(store, generate.id, name, (j) => j.status === 'CANCELLED')
    expect(calls).toBe(1)
    expect((await historyOf(store, job.id)).at(-1)).toBe('1:CANCELLING>CANCELLED:STOPPED_BY_CANCEL')
  })

  it('store unavailable: no new effect; the run stays unresolved, not lost, and resumes', async () => {
    const frozen = freezableStore(store)
    const ready = gate()
    const proceed = gate()
    const dispatchedBy: number[] = []
    const { name, generate } = await setup(
      async (ctx) => {
        if (ctx.attempt === 1) {
          ready.open()
          await proceed.promise
        }
        await ctx.effect('tool', async () => {
          dispatchedBy.push(ctx.attempt)
        })
      },
      { on: frozen, leaseMs: 600, worker: { pollMs: 50 } },
    )
    await ready.promise
    frozen.freeze() // the store is unreachable from the worker from here on
    proceed.open()
    await delay(900) // past the lease: the attempt's clock fires CLAIM_EXPIRED locally
    expect(dispatchedBy).toEqual([]) // failed closed: the intent could not be recorded, nothing was dispatched
    const meanwhile = await waitForJob(store, generate.id, name, () => true)
    expect(meanwhile.status).toBe('ACTIVE') // unresolved, not failed, not cancelled
    frozen.thaw()
    const done = await waitForJob(store, generate.id, name, (j) => j.status === 'COMPLETED', 15_000)
    expect(dispatchedBy).toEqual([done.attempt])
    expect(done.attempt).toBeGreaterThan(1)
    expect(await effectsOf(done.id)).toMatchObject([{ key: 'tool', status: 'DONE', attempt: done.attempt }])
  })

  it('effect in flight at cancel: no next effect; the current one stays explicitly unresolved until reconciled', async () => {
    const inFlight = gate()
    const provider = gate<string>()
    const calls: string[] = []
    const { name, server, generate, cancel } = await setup(async (ctx) => {
      await ctx
        .effect('first', async () => {
          calls.push('first')
          inFlight.open()
          return provider.promise // ignores the signal: the provider call is out of our hands
        })
        .catch(() => {})
      await ctx.effect('second', async () => {
        calls.push('second')
      })
    })
    await inFlight.promise
    await cancel()
    // Past the grace period the run is fenced out; its dispatched effect cannot be proven either way.
    const unknown = await waitForJob(store, generate.id, name, (j) => j.status === 'UNKNOWN')
    expect(await effectsOf(unknown.id)).toMatchObject([{ key: 'first', status: 'UNKNOWN' }])
    // The drain forced the run out as attempt 2.
    expect((await historyOf(store, unknown.id)).at(-1)).toBe('2:CANCELLING>UNKNOWN:EFFECT_UNKNOWN')

    // An operator reconciles it (the provider says it happened): the run settles as cancelled.
    const resolved = await server.operator.resolveEffect(unknown.id, 'first', { done: true, result: 'receipt-1' }, 'operator')
    expect(resolved.status).toBe('CANCELLED')
    provider.open('late') // the stuck call returns at last; the handler tries its next effect
    await delay(300)
    expect(calls).toEqual(['first']) // never the second
    const effects = await effectsOf(unknown.id)
    expect(effects.find((e) => e.key === 'first')?.status).toBe('DONE')
    expect(effects.find((e) => e.key === 'second')?.status ?? 'never recorded').not.toBe('DONE')
    expect(await historyOf(store, unknown.id)).toContain('2:UNKNOWN>CANCELLED:OPERATOR_RESOLVED')
  })

  it('effect in flight at cancel: a late outcome resolves the UNKNOWN it left, and the run settles', async () => {
    const inFlight = gate()
    const provider = gate<string>()
    const { name, generate, cancel } = await setup(async (ctx) => {
      await ctx.effect('first', async () => {
        inFlight.open()
        return provider.promise
      })
    })
    await inFlight.promise
    await cancel()
    const unknown = await waitForJob(store, generate.id, name, (j) => j.status === 'UNKNOWN')
    provider.open('receipt-late') // the provider answers after all: the delivery record tells the truth
    const settled = await waitForJob(store, generate.id, name, (j) => j.status === 'CANCELLED')
    expect(settled.id).toBe(unknown.id)
    expect(await effectsOf(unknown.id)).toMatchObject([{ key: 'first', status: 'DONE' }])
    expect((await historyOf(store, unknown.id)).at(-1)).toBe('2:UNKNOWN>CANCELLED:EFFECT_RESOLVED_LATE')
  })

  it('forced cancellation: a run that ignores its signal past the grace period is fenced out, never resolved to success', async () => {
    const running = gate()
    const release = gate()
    let appendError: unknown
    const { name, sessionId, generate, cancel } = await setup(async (ctx) => {
      running.open()
      await release.promise // ignores ctx.signal entirely
      appendError = await ctx
        .append({ type: 'chunk', payload: { of: ctx.event.id, delta: 'too late' } })
        .then(() => undefined, (e: unknown) => e)
    })
    await running.promise
    await cancel()
    const job = await waitForJob(store, generate.id, name, (j) => j.status === 'CANCELLED') // grace is 400 ms here
    // Forced out: the drain took the run as attempt 2.
    expect((await historyOf(store, job.id)).at(-1)).toBe('2:CANCELLING>CANCELLED:FORCED_AFTER_GRACE')
    release.open() // the run finally tries to write, then returns normally
    await waitUntil(() => appendError !== undefined, 'the late append to be refused')
    expect((appendError as { code?: string }).code).toBe('fenced')
    await delay(200)
    expect((await waitForJob(store, generate.id, name, () => true)).status).toBe('CANCELLED') // not COMPLETED
    const chunks = await query(store.db, sql`select 1 from a2_events where session_id = ${sessionId} and type = 'chunk'`)
    expect(chunks).toHaveLength(0)
  })

  it('replays a recorded effect on retry instead of calling it again', async () => {
    const calls: number[] = []
    const { name, generate } = await setup(async (ctx) => {
      const receipt = await ctx.effect('charge', async (key) => {
        calls.push(ctx.attempt)
        return `receipt for ${key}`
      })
      if (ctx.attempt === 1) throw new Error('crash after the effect')
      expect(receipt).toMatch(/^receipt for a2-\d+-charge$/)
    })
    await waitForJob(store, generate.id, name, (j) => j.status === 'COMPLETED')
    expect(calls).toEqual([1])
  })

  it('a reconcile verdict from an attempt that no longer holds the run changes nothing (fenced, row count checked)', async () => {
    const { name, generate } = await setup(async () => {}, { start: false })
    const [{ id: jobId }] = await query<{ id: number }>(store.db, sql`select id from a2_jobs where event_id = ${generate.id} and consumer = ${name}`)
    // An effect a dead attempt 0 left DISPATCHED.
    await query(store.db, sql`insert into a2_effects (job_id, key, status, attempt, cancel_version) values (${jobId}, 'charge', 'DISPATCHED', 0, 0)`)
    const { applyVerdict } = await import('./internal/effects')
    const stale = await applyVerdict(store.db, Number(jobId), 3, 'charge', { done: true, result: 'r' }).catch((e) => e)
    expect(stale?.code).toBe('fenced')
    expect(await effectsOf(Number(jobId))).toMatchObject([{ key: 'charge', status: 'DISPATCHED' }])
    expect(await historyOf(store, Number(jobId))).toEqual([])
    // The attempt that holds the run: the effect and the history move together.
    expect(await applyVerdict(store.db, Number(jobId), 0, 'charge', { done: true, result: 'r' })).toEqual({ value: 'r' })
    expect(await effectsOf(Number(jobId))).toMatchObject([{ key: 'charge', status: 'DONE' }])
    expect(await historyOf(store, Number(jobId))).toEqual(['0:ACTIVE>ACTIVE:EFFECT_RECONCILED_DONE'])
    // Settled once: a second verdict finds nothing to move.
    expect((await applyVerdict(store.db, Number(jobId), 0, 'charge', { done: false }).catch((e) => e))?.code).toBe('fenced')
  })

  it('a job cancelled before anyone claimed it never runs', async () => {
    let ran = false
    const { name, server, generate, cancel } = await setup(
      async () => {
        ran = true
      },
      { start: false },
    )
    await cancel()
    await server.startWorker({ pollMs: 50 })
    const job = await waitForJob(store, generate.id, name, (j) => j.status === 'CANCELLED')
    await delay(150)
    expect(ran).toBe(false)
    expect(await historyOf(store, job.id)).toEqual(['0:ACTIVE>CANCELLING:CANCEL_APPENDED', '0:CANCELLING>CANCELLED:CANCELLED_BEFORE_START'])
    await waitUntil(() => true, 'noop')
  })
})
