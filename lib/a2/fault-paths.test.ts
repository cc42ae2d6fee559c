/**
 * The contract's fault paths, one concrete interleaving each, on PGlite and on Postgres:
 * a Stop against an UNKNOWN run, a crash on the last attempt, settling with a dead
 * attempt's effect in flight, two drains at once, renewal while a stopped run unwinds, the
 * forced path with an effect still running, which reconcile hook a drain asks (and which
 * worker drains), lanes held by UNKNOWN runs, and a drain error that must not stop claims.
 * The model-based suite (interleavings.test.ts) explores the same boundaries at random.
 *
 * A dead attempt is written as a killed process leaves it: the job claimed at some attempt
 * by an owner that renews no more, and effects it had dispatched.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { consumer, createServer, type A2Server, type ConsumerOptions, type Store, type WorkerOptions } from '@/lib/a2/server'
import { validateInput } from './internal/core/contract'
import { drainOnce } from './internal/runtime/drain'
import type { RuntimeHost } from './internal/runtime/runtime-host'
import { append } from './internal/log/append'
import { query } from './internal/store/store'
import { layers } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'
import { historyOf, interceptStore, useRuntimeWorld, waitForJob, waitUntil } from './test-kit/runtime'

type Chat = typeof chat
type Handler = Parameters<ReturnType<typeof consumer<Chat, 'generate'>>['run']>[0]

describe.each(layers)('fault paths on %s', (kind) => {
  const world = useRuntimeWorld<A2Server<Chat>>(kind)
  const { servers, hold } = world
  let store: Store
  beforeAll(() => {
    store = world.store()
  })

  let n = 0
  async function setup(
    handler: Handler,
    options: Partial<Pick<ConsumerOptions<Chat, 'generate'>, 'maxAttempts' | 'leaseMs' | 'reconcile' | 'lane'>> & {
      worker?: WorkerOptions
      on?: Store
      start?: boolean
      name?: string
    } = {},
  ) {
    const name = options.name ?? `fault${++n}`
    const c = consumer({
      contract: chat,
      name,
      types: ['generate'],
      abortOn: { cancelled: (event, trigger) => event.payload.of === trigger.id },
      maxAttempts: options.maxAttempts ?? 3,
      leaseMs: options.leaseMs ?? 10_000,
      reconcile: options.reconcile,
      lane: options.lane,
    }).run(handler)
    const server = createServer({ contract: chat, consumers: [c], store: options.on ?? store })
    servers.push(server)
    const { id: sessionId } = await server.sessions.create('u')
    const start = () => server.startWorker({ pollMs: 50, graceMs: 400, ...options.worker })
    if (options.start !== false) await start()
    const [generate] = await server.append(sessionId, { type: 'generate', payload: {} })
    const [{ id: jobId }] = await query<{ id: number }>(store.db, sql`select id from a2_jobs where event_id = ${generate.id} and consumer = ${name}`)
    const cancel = (of = generate.id) => server.append(sessionId, { type: 'cancelled', payload: { of, lastSeenIndex: 0 } })
    /** What the drain needs of this server, on any store (a test drives drains by hand). */
    const host = (on: Store = store) => ({
      store: on,
      contract: chat,
      consumers: new Map([[name, c as never]]),
      append: () => Promise.reject(new Error('this drain appends nothing')),
    })
    return { name, server, sessionId, generate, jobId: Number(jobId), cancel, start, host }
  }
  /** A fenced server-side append on the test's store, for a drain that must write the run's end. */
  const appendFor =
    (server: A2Server<Chat>): RuntimeHost['append'] =>
    (sessionId, inputs, options) =>
      append(
        store,
        server.routing,
        sessionId,
        inputs.map((input) => validateInput(chat, input, 'server')),
        options,
      )
  const drainWith = (host: ReturnType<Awaited<ReturnType<typeof setup>>['host']>, owner = 'test-drain') =>
    drainOnce(host, { owner, graceMs: 400, forceOut: () => {} })

  /** The state a killed worker leaves: the job held at `attempt` by an owner whose lease has run out. */
  async function dieHolding(jobId: number, attempt: number, dispatched: string[], options: { status?: string } = {}) {
    await query(
      store.db,
      sql`update a2_jobs set attempt = ${attempt}, owner = 'killed-worker', lease_until = now() - interval '1 second',
              status = ${options.status ?? 'ACTIVE'},
              cancelling_since = case when ${options.status ?? 'ACTIVE'} = 'CANCELLING' then now() else cancelling_since end
          where id = ${jobId}`,
    )
    for (const key of dispatched) {
      await query(
        store.db,
        sql`insert into a2_effects (job_id, key, status, attempt, cancel_version) values (${jobId}, ${key}, 'DISPATCHED', ${attempt}, 0)`,
      )
    }
  }

  const effectsOf = (jobId: number) =>
    query<{ key: string; status: string }>(store.db, sql`select key, status from a2_effects where job_id = ${jobId} order by key`)
  const jobRow = async (jobId: number) =>
    (
      await query<{ status: string; attempt: number; cancel_version: number; cancelled_by: unknown }>(
        store.db,
        sql`select status, attempt, cancel_version, cancelled_by from a2_jobs where id = ${jobId}`,
      )
    )[0]

  it('3 · a Stop appended while the run is UNKNOWN is recorded, and honoured when the operator resolves it', async () => {
    const started: Array<{ attempt: number; signalled: boolean }> = []
    let dispatched = 0
    const s = await setup(
      async (ctx) => {
        started.push({ attempt: ctx.attempt, signalled: ctx.signal.aborted })
        await ctx.effect('tool', async () => {
          dispatched++
        })
      },
      { start: false },
    )
    await dieHolding(s.jobId, 1, ['tool'])
    await s.start()
    // Attempt 2 finds attempt 1's effect DISPATCHED and cannot reconcile it: the run is UNKNOWN.
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'UNKNOWN')
    await s.cancel()
    const stopped = await jobRow(s.jobId)
    expect(stopped).toMatchObject({ status: 'UNKNOWN', cancel_version: 1 })
    expect(stopped.cancelled_by).toMatchObject({ type: 'cancelled' })
    expect((await historyOf(store, s.jobId)).at(-1)).toBe('2:UNKNOWN>UNKNOWN:CANCEL_APPENDED')

    const resolved = await s.server.operator.resolveEffect(s.jobId, 'tool', { done: false }, 'operator')
    expect(resolved.status).toBe('CANCELLED')
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'CANCELLED')
    // Attempt 2 was the only one to start, and nothing was dispatched after the Stop.
    expect(started).toEqual([{ attempt: 2, signalled: false }])
    expect(dispatched).toBe(0)
  })

  it('4 · a crash on the last attempt reconciles its effect or leaves the run UNKNOWN; never FAILED with it DISPATCHED', async () => {
    const s = await setup(async () => {}, { start: false, maxAttempts: 1 })
    await dieHolding(s.jobId, 1, ['tool'])
    await s.start()
    const job = await waitForJob(store, s.generate.id, s.name, (j) => j.status !== 'ACTIVE')
    expect(job.status).toBe('UNKNOWN')
    expect(await effectsOf(s.jobId)).toEqual([{ key: 'tool', status: 'UNKNOWN' }])
    // An operator can decide it (not `conflict`): not done → one more attempt runs and completes.
    const resolved = await s.server.operator.resolveEffect(s.jobId, 'tool', { done: false }, 'operator')
    expect(resolved.status).toBe('ACTIVE')
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'COMPLETED')
  })

  it('4 · with a reconcile hook, the last attempt’s crash is reconciled and the run FAILS with the effect settled', async () => {
    const s = await setup(async () => {}, { start: false, maxAttempts: 1, reconcile: async () => ({ done: true, result: 'r' }) })
    await dieHolding(s.jobId, 1, ['tool'])
    await s.start()
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'FAILED')
    expect(await effectsOf(s.jobId)).toEqual([{ key: 'tool', status: 'DONE' }])
  })

  it.each(['returns', 'returns after a Stop', 'throws after a Stop'] as const)(
    '5 · a run whose handler %s does not settle over a dead attempt’s effect in flight',
    async (how) => {
      const s = await setup(
        async (ctx) => {
          if (how === 'returns') return
          await s.cancel()
          await waitUntil(() => ctx.signal.aborted, 'the Stop to reach the attempt')
          if (how === 'throws after a Stop') throw ctx.signal.reason
        },
        { start: false },
      )
      await dieHolding(s.jobId, 1, ['tool'])
      await s.start()
      const job = await waitForJob(store, s.generate.id, s.name, (j) => j.attempt === 2 && j.status !== 'ACTIVE' && j.status !== 'CANCELLING')
      // No reconcile hook: attempt 1's effect cannot be proven either way.
      expect(job.status).toBe('UNKNOWN')
      expect(await effectsOf(s.jobId)).toEqual([{ key: 'tool', status: 'UNKNOWN' }])
    },
  )

  it('6 · two drains at once: one settles the run, from the stored effects; never CANCELLED with an effect UNKNOWN', async () => {
    const s = await setup(async () => {}, { start: false })
    await dieHolding(s.jobId, 1, ['tool'], { status: 'CANCELLING' })
    // Drain 1 holds its final status change until drain 2 has run to the end.
    const drain2Done = hold()
    const held = interceptStore(store, {
      before: async (text) => {
        if (/update a2_jobs\s+(j\s+)?set status/.test(text)) await drain2Done.promise
      },
    })
    const drain1 = drainWith(s.host(held), 'drain-1').catch((e: unknown) => e)
    await waitUntil(async () => (await effectsOf(s.jobId))[0]?.status !== 'DISPATCHED', 'drain 1 to decide the effect')
    await drainWith(s.host(), 'drain-2')
    drain2Done.open()
    await drain1
    const job = await jobRow(s.jobId)
    const effects = await effectsOf(s.jobId)
    expect({ job: job.status, effects }).toEqual({ job: 'UNKNOWN', effects: [{ key: 'tool', status: 'UNKNOWN' }] })
  })

  it('7 · renewal goes on while a stopped run unwinds: its last append lands and it ends STOPPED_BY_CANCEL', async () => {
    const unwinding = hold()
    const proceed = hold()
    let lastAppend: unknown = 'not tried'
    const s = await setup(
      async (ctx) => {
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }))
        unwinding.open()
        await proceed.promise // a cooperative unwind that takes longer than the lease
        lastAppend = await ctx.append({ type: 'message', payload: { text: 'last words' } }).then(
          () => 'ok',
          (e: { code?: string }) => e.code,
        )
      },
      { leaseMs: 600, worker: { graceMs: 30_000 } },
    )
    await waitForJob(store, s.generate.id, s.name, (j) => j.attempt === 1)
    await s.cancel()
    await unwinding.promise
    const [{ lease: leaseAtStop }] = await query<{ lease: string }>(
      store.db,
      sql`select lease_until::text as lease from a2_jobs where id = ${s.jobId}`,
    )
    // Until the lease the attempt held at the Stop has run out in the database's clock.
    await waitUntil(
      async () =>
        (await query<{ past: boolean }>(store.db, sql`select now() > ${leaseAtStop}::timestamptz + interval '200 milliseconds' as past`))[0].past,
      'the lease held at the Stop to run out',
    )
    proceed.open()
    await waitUntil(() => lastAppend !== 'not tried', 'the unwinding run to append')
    expect(lastAppend).toBe('ok')
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'CANCELLED')
    expect((await historyOf(store, s.jobId)).at(-1)).toBe('1:CANCELLING>CANCELLED:STOPPED_BY_CANCEL')
  })

  it('8 · the forced path never calls a still-running effect "not done": its late outcome is recorded', async () => {
    const inFlight = hold()
    const provider = hold()
    let outcome: unknown = 'pending'
    const s = await setup(
      async (ctx) => {
        outcome = await ctx
          .effect('tool', async () => {
            inFlight.open()
            await provider.promise // ignores the signal: the provider call is out of our hands
            return 'receipt'
          })
          .then(
            (r) => r,
            (e: { code?: string }) => e.code ?? String(e),
          )
      },
      { reconcile: async () => ({ done: false }) },
    )
    await inFlight.promise
    await s.cancel()
    // Past the grace period (400 ms) the run is fenced out while its effect is still running.
    await waitForJob(store, s.generate.id, s.name, (j) => j.status !== 'ACTIVE' && j.status !== 'CANCELLING')
    expect(await effectsOf(s.jobId)).toEqual([{ key: 'tool', status: 'UNKNOWN' }])
    provider.open()
    await waitUntil(() => outcome !== 'pending', 'the effect to return')
    expect(outcome).toBe('receipt')
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'CANCELLED')
    expect(await effectsOf(s.jobId)).toEqual([{ key: 'tool', status: 'DONE' }])
    expect((await historyOf(store, s.jobId)).at(-1)).toMatch(/UNKNOWN>CANCELLED:EFFECT_RESOLVED_LATE$/)
  })

  it('8 · an overlapSafe effect that ends because its run was stopped records why: FAILED, with the abort’s code beside the message', async () => {
    // overlapSafe, as the chat's model call is: one that is not is asked about or UNKNOWN (effects-in-flight.test.ts, item 7).
    const s = await setup(async (ctx) => {
      await ctx
        .effect(
          'model',
          (_key, signal) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true })),
          { overlapSafe: true },
        )
        .catch(() => {})
    })
    await waitUntil(async () => (await effectsOf(s.jobId))[0]?.status === 'DISPATCHED', 'the effect to be dispatched')
    await s.cancel()
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'CANCELLED')
    const [effect] = await query<{ status: string; error: { message?: string; aborted?: string } }>(
      store.db,
      sql`select status, error from a2_effects where job_id = ${s.jobId}`,
    )
    // The delivery record stays true (the call did not succeed); the code lets a view say "stopped".
    expect(effect).toMatchObject({ status: 'FAILED', error: { aborted: 'CANCELLED' } })
  })

  it('9 · the drain asks the consumer’s own reconcile hook with the idempotency key; a worker without the consumer leaves it alone', async () => {
    const asked: string[] = []
    const s = await setup(async () => {}, {
      start: false,
      reconcile: async (key) => {
        asked.push(key)
        return { done: true, result: 'found' }
      },
    })
    await dieHolding(s.jobId, 1, ['note:1'], { status: 'CANCELLING' })
    // A drain on a worker that runs another consumer only: it must not decide this one's effects.
    const other = await setup(async () => {}, { start: false })
    await drainWith(other.host())
    expect(await effectsOf(s.jobId)).toEqual([{ key: 'note:1', status: 'DISPATCHED' }])
    expect((await jobRow(s.jobId)).status).toBe('CANCELLING')
    await s.start()
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'CANCELLED')
    expect(asked).toEqual([`a2-${s.jobId}-note:1`])
    expect(await effectsOf(s.jobId)).toEqual([{ key: 'note:1', status: 'DONE' }])
  })

  it('10 · an UNKNOWN run holds its lane: the next job of the lane waits for the operator', async () => {
    const started: string[] = []
    const s = await setup(
      async (ctx) => {
        started.push(ctx.event.id)
        if (ctx.event.id === s.generate.id) await ctx.effect('tool', async () => 'x')
      },
      { start: false, lane: 'gen' },
    )
    await dieHolding(s.jobId, 1, ['tool'])
    const [second] = await s.server.append(s.sessionId, { type: 'generate', payload: {} })
    await s.start()
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'UNKNOWN')
    // A job in another session of the same consumer is claimed after `second` became claimable.
    const { id: otherSession } = await s.server.sessions.create('u')
    const [sentinel] = await s.server.append(otherSession, { type: 'generate', payload: {} })
    await waitForJob(store, sentinel.id, s.name, (j) => j.status === 'COMPLETED')
    expect((await waitForJob(store, second.id, s.name, () => true)).attempt).toBe(0)
    expect(started).not.toContain(second.id)
    await s.server.operator.resolveEffect(s.jobId, 'tool', { done: true, result: 'x' }, 'operator')
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'COMPLETED')
    await waitForJob(store, second.id, s.name, (j) => j.status === 'COMPLETED')
  })

  it.each(['on its last attempt', 'stopped before the next claim'] as const)(
    '12 · a run released from an owner judged dead is taken by the drain as a new attempt (%s): the owner may still be running it',
    async (how) => {
      // Liveness can be wrong: the owner's lock connection dropped while its attempts ran on.
      // Whatever the drain does next must fence that attempt out, as a claim would.
      const s = await setup(async () => {}, { start: false, maxAttempts: how === 'on its last attempt' ? 1 : 3 })
      await query(
        store.db,
        sql`update a2_jobs set attempt = 1, owner = 'cut-off-worker', owner_key = 999, lease_until = now() + interval '10 seconds'
            where id = ${s.jobId}`,
      )
      const judge = {
        key: 1,
        ownerGone: (ownerKey: ReturnType<typeof sql>) => sql`${ownerKey} = 999`,
        trusted: () => true,
        release: async () => {},
      }
      // This drain writes the run's ending events, as a worker's does.
      const host = { ...s.host(), append: appendFor(s.server) }
      const drain = () => drainOnce(host, { owner: 'test-drain', liveness: judge, graceMs: 400, forceOut: () => {} })
      await drain()
      if (how === 'stopped before the next claim') {
        expect((await jobRow(s.jobId)).status).toBe('ACTIVE') // released, not yet claimed
        await s.cancel()
        await drain()
      }
      const job = await jobRow(s.jobId)
      expect(job.status).toBe(how === 'on its last attempt' ? 'FAILED' : 'CANCELLED')
      expect(job.attempt).toBe(2)
      if (how === 'stopped before the next claim') {
        expect((await historyOf(store, s.jobId)).at(-1)).toBe('2:CANCELLING>CANCELLED:DRAINED_AFTER_OWNER_LOST')
      }
    },
  )

  it('11 · a drain that fails stops no claim: a tick claims before it drains, and the ticks after a failed drain claim on', async () => {
    const seen: string[] = []
    const failing = interceptStore(store, {
      before: (text) => {
        if (/for update skip locked/.test(text) && /attempt = j\.attempt \+ 1/.test(text)) seen.push('claim')
        // Only the drain's statements name cancelling_since outside an append's transaction.
        if (text.includes('cancelling_since')) {
          seen.push('drain')
          throw new Error('drain query failed')
        }
      },
    })
    // Appended before the worker starts: its first tick finds the job and a drain due.
    const s = await setup(async () => {}, { on: failing, start: false })
    await s.start()
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'COMPLETED')
    expect(seen.slice(0, 2)).toEqual(['claim', 'drain'])
    await waitUntil(() => seen.includes('drain'), 'a drain to fail')
    const [second] = await s.server.append(s.sessionId, { type: 'generate', payload: {} })
    await waitForJob(store, second.id, s.name, (j) => j.status === 'COMPLETED')
  })
})
