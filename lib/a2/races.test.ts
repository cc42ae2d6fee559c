/**
 * The race table of the cancellation-contract article, one test per row that fits one
 * process, on PGlite and on Postgres. Each injects its failure deterministically and
 * asserts safety (no unauthorized effect, no lost cancel) and evidence (the rows an
 * operator reads later). The rows where a process must die (the provider request made and
 * the process gone; the controller gone mid-drain) run here with a simulated death — a
 * worker whose store freezes for good at the fatal moment, its lease then running out — and
 * in races.multiprocess.test.ts with real processes killed by SIGKILL (Postgres only). The
 * dispatch's cancel_version predicate has a test of its own. No test sleeps: "nothing more
 * happens" is the worker's further claim ticks (`claimTicks`), a retry "being due" is
 * `run_at <= now()` in the database.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { consumer, createServer, type A2Server, type ConsumerOptions, type Store, type WorkerOptions } from '@/lib/a2/server'
import { query } from './internal/store/store'
import { layers } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'
import { claimTicks, freezableStore, gate, historyOf, interceptStore, useRuntimeWorld, waitForJob, waitUntil } from './test-kit/runtime'

type Handler = Parameters<ReturnType<typeof consumer<typeof chat, 'generate'>>['run']>[0]

describe.each(layers)('the race table on %s', (kind) => {
  const world = useRuntimeWorld<A2Server<typeof chat>>(kind)
  const { servers, hold, cleanups } = world
  let store: Store
  beforeAll(() => {
    store = world.store()
  })

  let n = 0
  interface ServeOptions {
    maxAttempts?: number
    leaseMs?: number
    on?: Store
    reconcile?: ConsumerOptions<typeof chat, 'generate'>['reconcile']
  }
  /** A server (not started) with one consumer of `generate` named `name`; `ticks` counts its worker's claims. */
  function serve(name: string, handler: Handler, options: ServeOptions = {}) {
    const c = consumer({
      contract: chat,
      name,
      types: ['generate'],
      abortOn: ['cancelled'],
      maxAttempts: options.maxAttempts ?? 3,
      leaseMs: options.leaseMs ?? 10_000,
      reconcile: options.reconcile,
    }).run(handler)
    const ticks = claimTicks(options.on ?? store)
    const server = createServer({ contract: chat, consumers: [c], store: ticks.store })
    servers.push(server)
    return { server, ticks }
  }

  /**
   * A server with one consumer of `generate` (abortOn cancelled) under a fresh name, and a
   * worker. `ticks` counts that worker's claims: "nothing more happens" is waited for as
   * `ticks.more()`, never slept.
   */
  async function setup(handler: Handler, options: ServeOptions & { worker?: WorkerOptions; start?: boolean; name?: string } = {}) {
    const name = options.name ?? `race${++n}`
    const { server, ticks } = serve(name, handler, options)
    const { id: sessionId } = await server.sessions.create('u')
    const start = (worker: WorkerOptions = {}) => server.startWorker({ pollMs: 50, graceMs: 400, ...options.worker, ...worker })
    const worker = options.start !== false ? await start() : undefined
    const [generate] = await server.append(sessionId, { type: 'generate', payload: {} })
    const cancel = () => server.append(sessionId, { type: 'cancelled', payload: { of: generate.id, lastSeenIndex: 0 } })
    return { name, server, sessionId, generate, cancel, ticks, worker, start }
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
    const { name, generate, cancel } = await setup(
      async (ctx) => {
        claimed.open()
        await proceed.promise // a worker that does not look at its signal
        await ctx.effect('tool', async () => {
          dispatched++
        })
      },
      // Not about the grace period: on a loaded machine 400 ms could force the run out first.
      { worker: { graceMs: 60_000 } },
    )
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
    const paused = gate()
    const setupDone = await setup(
      async (ctx) => {
        await ctx.effect('tool', async () => {
          dispatched++
        })
      },
      {
        worker: {
          graceMs: 60_000, // not about the grace period
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
    const { name, server, generate, cancel, ticks, start } = await setup(
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
    // The backoff has expired in the database's clock: the retry is due.
    expect(await waitForJob(store, generate.id, name, (j) => j.due)).toMatchObject({ status: 'CANCELLING', attempt: 1 })
    await start()
    await waitForJob(store, generate.id, name, (j) => j.status === 'CANCELLED')
    await ticks.more() // the worker looked at the queue again after the run settled
    expect(calls).toBe(1)
    expect((await waitForJob(store, generate.id, name, () => true)).attempt).toBe(1) // never claimed again
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
    let firstSignal: AbortSignal | undefined
    const { name, generate } = await setup(
      async (ctx) => {
        if (ctx.attempt === 1) {
          firstSignal = ctx.signal
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
    // Past the lease: the attempt's own clock fires CLAIM_EXPIRED, with no query.
    await waitUntil(() => firstSignal?.aborted, 'the attempt’s own clock to fire', 5_000)
    expect((firstSignal!.reason as { code?: string }).code).toBe('CLAIM_EXPIRED')
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
    let second: unknown = 'not tried'
    const { name, server, generate, cancel } = await setup(async (ctx) => {
      await ctx
        .effect('first', async () => {
          calls.push('first')
          inFlight.open()
          return provider.promise // ignores the signal: the provider call is out of our hands
        })
        .catch(() => {})
      second = await ctx
        .effect('second', async () => {
          calls.push('second')
        })
        .then(
          () => 'dispatched',
          (e: { code?: string }) => e.code ?? e,
        )
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
    await waitUntil(() => second !== 'not tried', 'the handler to try its next effect')
    expect(second).toBe('fenced') // refused: attempt 1 no longer holds the run
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
    const { name, sessionId, generate, cancel, worker } = await setup(async (ctx) => {
      running.open()
      await release.promise // ignores ctx.signal entirely
      appendError = await ctx.append({ type: 'chunk', payload: { of: ctx.event.id, delta: 'too late' } }).then(
        () => undefined,
        (e: unknown) => e,
      )
    })
    await running.promise
    await cancel()
    const job = await waitForJob(store, generate.id, name, (j) => j.status === 'CANCELLED') // grace is 400 ms here
    // Forced out: the drain took the run as attempt 2.
    expect((await historyOf(store, job.id)).at(-1)).toBe('2:CANCELLING>CANCELLED:FORCED_AFTER_GRACE')
    release.open() // the run finally tries to write, then returns normally
    await waitUntil(() => appendError !== undefined, 'the late append to be refused')
    expect((appendError as { code?: string }).code).toBe('fenced')
    await waitUntil(() => worker!.activeCount === 0, 'the forced-out attempt to return and settle')
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
    const { applyVerdict } = await import('./internal/runtime/effects')
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
    const { name, generate, cancel, ticks, start } = await setup(
      async () => {
        ran = true
      },
      { start: false },
    )
    await cancel()
    const worker = await start()
    const job = await waitForJob(store, generate.id, name, (j) => j.status === 'CANCELLED')
    await ticks.more() // the worker looked at the queue again after the run settled
    await waitUntil(() => worker.activeCount === 0, 'no attempt left running')
    expect(ran).toBe(false)
    expect((await waitForJob(store, generate.id, name, () => true)).attempt).toBe(0) // never claimed
    expect(await historyOf(store, job.id)).toEqual(['0:ACTIVE>CANCELLING:CANCEL_APPENDED', '0:CANCELLING>CANCELLED:CANCELLED_BEFORE_START'])
  })

  it('dispatch requires the cancel_version the attempt observed: ACTIVE at the same attempt with a newer version is refused', async () => {
    let dispatched = 0
    let outcome: unknown = 'pending'
    let precondition: unknown
    const { name, generate } = await setup(
      async (ctx) => {
        outcome = await ctx
          .effect('tool', async () => {
            dispatched++
          })
          .then(
            () => 'dispatched',
            (e: { code?: string }) => e.code ?? e,
          )
      },
      {
        worker: {
          hooks: {
            // After the attempt read its state and before the dispatch: the run's cancel_version
            // moves on while it stays ACTIVE at this very attempt (written directly). Status and
            // attempt still match; only the version tells the dispatch it is stale.
            beforeDispatch: async ({ jobId, attempt }) => {
              precondition = await query<{ status: string; attempt: number; cancel_version: number }>(
                store.db,
                sql`update a2_jobs set cancel_version = cancel_version + 1
                    where id = ${jobId} and attempt = ${attempt} and status = 'ACTIVE'
                    returning status, attempt, cancel_version`,
              )
            },
          },
        },
      },
    )
    await waitUntil(() => outcome !== 'pending', 'the handler to try its effect')
    expect(precondition).toEqual([{ status: 'ACTIVE', attempt: 1, cancel_version: 1 }])
    expect(dispatched).toBe(0)
    expect(outcome).toBe('run_cancelled') // EffectNotDispatched: fn was never called
    const job = await waitForJob(store, generate.id, name, (j) => j.status !== 'ACTIVE')
    // The effect is recorded against the version the attempt observed (0), refused at 1.
    expect(await effectsOf(job.id)).toEqual([{ key: 'tool', status: 'CANCELLED_BEFORE_DISPATCH', attempt: 1, cancel_version: 0 }])
  })

  /** An outside provider, idempotent by key, with a lookup API: what it did, by idempotency key. */
  function provider() {
    const charges: string[] = []
    return {
      charges,
      charge(key: string) {
        if (!charges.includes(key)) charges.push(key)
        return { receipt: `r-${key}` }
      },
      lookup: (key: string) => charges.includes(key),
    }
  }

  for (const via of ['reconcile', 'operator'] as const) {
    it(`process dies after the provider request (one process): effect ${via === 'reconcile' ? 'reconciled through the consumer’s hook' : 'UNKNOWN, then reconciled by an operator'}`, async () => {
      const name = `died_${via}${++n}`
      const outside = provider()
      // The process that dies: its store freezes the moment the provider has done the work,
      // so nothing it does afterwards (recording the outcome, renewing) reaches the database.
      const dying = freezableStore(store)
      cleanups.push(() => dying.thaw())
      const died = hold()
      const victim = await setup(
        async (ctx) => {
          await ctx.effect('charge', async (key) => {
            const receipt = outside.charge(key)
            dying.freeze() // killed here: after the provider request, before its outcome is recorded
            died.open()
            return receipt
          })
        },
        { name, on: dying, leaseMs: 600 },
      )
      await died.promise
      const dead = await waitForJob(store, victim.generate.id, name, (j) => j.lease_lapsed) // nobody renews it
      expect(dead).toMatchObject({ status: 'ACTIVE', attempt: 1 })
      expect(await effectsOf(dead.id)).toEqual([{ key: 'charge', status: 'DISPATCHED', attempt: 1, cancel_version: 0 }])

      // A successor process: same consumer, its own worker on the live store.
      const asked: Array<[string, { key: string; jobId: number }]> = []
      const calls: number[] = []
      const receipts: unknown[] = []
      const successor = serve(
        name,
        async (ctx) => {
          receipts.push(
            await ctx.effect('charge', async (key) => {
              calls.push(ctx.attempt)
              return outside.charge(key)
            }),
          )
        },
        {
          leaseMs: 600,
          reconcile:
            via === 'reconcile'
              ? async (key, effect) => {
                  asked.push([key, effect])
                  return outside.lookup(key) ? { done: true, result: { receipt: `r-${key}` } } : { done: false }
                }
              : undefined,
        },
      )
      await successor.server.startWorker({ pollMs: 50, graceMs: 400 })
      const key = `a2-${dead.id}-charge`
      if (via === 'reconcile') {
        const done = await waitForJob(store, victim.generate.id, name, (j) => j.status === 'COMPLETED')
        expect(done.attempt).toBe(2)
        expect(asked).toEqual([[key, { key: 'charge', jobId: dead.id }]])
        expect(await effectsOf(dead.id)).toMatchObject([{ key: 'charge', status: 'DONE' }])
        expect(await historyOf(store, dead.id)).toEqual([
          '1:ACTIVE>ACTIVE:LEASE_EXPIRED',
          '2:ACTIVE>ACTIVE:EFFECT_RECONCILED_DONE',
          '2:ACTIVE>COMPLETED:RETURNED',
        ])
      } else {
        const unknown = await waitForJob(store, victim.generate.id, name, (j) => j.status === 'UNKNOWN')
        expect(unknown.attempt).toBe(2)
        expect(await effectsOf(dead.id)).toEqual([{ key: 'charge', status: 'UNKNOWN', attempt: 1, cancel_version: 0 }])
        expect((await historyOf(store, dead.id)).slice(-2)).toEqual(['2:ACTIVE>ACTIVE:EFFECT_UNRECONCILED', '2:ACTIVE>UNKNOWN:EFFECT_UNKNOWN'])
        // The operator checks the provider and records that it happened; the run resumes and replays it.
        const resolved = await successor.server.operator.resolveEffect(
          dead.id,
          'charge',
          { done: outside.lookup(key), result: { receipt: 'from the provider dashboard' } },
          'ops',
        )
        expect(resolved.status).toBe('ACTIVE')
        const done = await waitForJob(store, victim.generate.id, name, (j) => j.status === 'COMPLETED')
        expect(done.attempt).toBe(3)
        expect(await historyOf(store, dead.id)).toContain('2:UNKNOWN>ACTIVE:OPERATOR_RESOLVED')
      }
      expect(outside.charges).toEqual([key]) // the provider did the work exactly once
      expect(calls).toEqual([]) // the successor never called it again: it replayed the record
      expect(receipts).toEqual([via === 'reconcile' ? { receipt: `r-${key}` } : { receipt: 'from the provider dashboard' }])
    })
  }

  it.each(['holding the run in its attempt', 'in its drain, after taking the run and before settling it'] as const)(
    'controller restarts during drain (one process), dying %s: the durable CANCELLING state resumes the drain',
    async (when) => {
      const name = `restart${++n}`
      const midDrain = when !== 'holding the run in its attempt'
      // The first controller (a worker: every worker drains) and its store, which freezes when it dies.
      const dying = freezableStore(store)
      cleanups.push(() => dying.thaw())
      const died = hold()
      let jobId = 0
      const watched = interceptStore(dying, {
        after: async (text) => {
          // The drain's take statement has committed: if it took this run, the controller dies now.
          if (!midDrain || died.opened || jobId === 0 || !text.includes('cancelling_since = null')) return
          const [row] = await query<{ status: string; attempt: number }>(store.db, sql`select status, attempt from a2_jobs where id = ${jobId}`)
          if (row.status === 'CANCELLING' && row.attempt === 2) {
            dying.freeze()
            died.open()
          }
        },
      })
      const running = hold()
      const never = hold() // opened only after the test, so the dead controller's attempt can be stopped
      const firstStarted: number[] = []
      const first = await setup(
        async (ctx) => {
          firstStarted.push(ctx.attempt)
          running.open()
          await never.promise // ignores its signal: only the drain can end this run
        },
        // Mid-drain: a short grace so the first controller's drain forces the run out (and dies doing it).
        { name, on: watched, leaseMs: 600, worker: { graceMs: midDrain ? 200 : 60_000 } },
      )
      await running.promise
      jobId = (await waitForJob(store, first.generate.id, name, (j) => j.attempt === 1)).id
      await first.cancel()
      await waitForJob(store, first.generate.id, name, (j) => j.status === 'CANCELLING')
      if (!midDrain) {
        dying.freeze() // gone while its attempt holds the CANCELLING run
        died.open()
      }
      await died.promise
      const stranded = await waitForJob(store, first.generate.id, name, (j) => j.lease_lapsed)
      expect(stranded).toMatchObject({ status: 'CANCELLING', attempt: midDrain ? 2 : 1, cancel_version: 1 })

      // The restarted controller: a new server and worker on the same store, only durable state to go on.
      let restartedRan = 0
      const restarted = serve(
        name,
        async () => {
          restartedRan++
        },
        { leaseMs: 600 },
      )
      await restarted.server.startWorker({ pollMs: 50, graceMs: 60_000 }) // the grace period cannot be what ends it
      const job = await waitForJob(store, first.generate.id, name, (j) => j.status === 'CANCELLED')
      // Taken as a new attempt from the dead holder: every late write of the dead one is fenced out.
      expect(job.attempt).toBe(stranded.attempt + 1)
      // Forced out by the dead controller's take: recorded there, so the restarted one says so too.
      expect(await historyOf(store, job.id)).toEqual(
        midDrain
          ? [
              '1:ACTIVE>CANCELLING:CANCEL_APPENDED',
              '1:CANCELLING>CANCELLING:FORCED_AFTER_GRACE',
              `${job.attempt}:CANCELLING>CANCELLED:FORCED_AFTER_GRACE`,
            ]
          : ['1:ACTIVE>CANCELLING:CANCEL_APPENDED', `${job.attempt}:CANCELLING>CANCELLED:DRAINED_AFTER_OWNER_LOST`],
      )
      expect(restartedRan).toBe(0) // the stopped run never started again
      expect(firstStarted).toEqual([1])
    },
  )
})
