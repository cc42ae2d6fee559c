/**
 * A call that may still be running is never called "not done" (lib/a2/README.md §6–8), one
 * concrete interleaving each, on PGlite and on Postgres: a handler that throws while one of
 * its effects is in flight (on its last attempt, and with a retry left), a shutdown that
 * hands over a run inside a call that ignores its signal, a Stop mid-call of an effect that
 * is not overlapSafe, a drain that dies after forcing a run out, and a Stop whose NOTIFY
 * lands between a claim and the attempt it starts. The model-based suite
 * (interleavings.test.ts, lib/a2/test-kit/state-models/effects.ts) explores the same boundaries at random.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { consumer, createServer, type A2Server, type ConsumerOptions, type Store, type WorkerOptions } from '@/lib/a2/server'
import { drainOnce } from './internal/runtime/drain'
import { query } from './internal/store/store'
import { layers } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'
import { aborted, claimTicks, historyOf, interceptStore, isClaim, useRuntimeWorld, waitForJob, waitUntil } from './test-kit/runtime'

type Chat = typeof chat
type Handler = Parameters<ReturnType<typeof consumer<Chat, 'generate'>>['run']>[0]

describe.each(layers)('effects in flight on %s', (kind) => {
  const world = useRuntimeWorld<A2Server<Chat>>(kind)
  const { servers, hold } = world
  let store: Store
  beforeAll(() => {
    store = world.store()
  })

  let n = 0
  async function setup(
    handler: Handler,
    options: Partial<Pick<ConsumerOptions<Chat, 'generate'>, 'maxAttempts' | 'leaseMs' | 'reconcile'>> & {
      worker?: WorkerOptions
      on?: Store
    } = {},
  ) {
    const name = `inflight${++n}`
    const c = consumer({
      contract: chat,
      name,
      types: ['generate'],
      abortOn: { cancelled: (event, trigger) => event.payload.of === trigger.id },
      maxAttempts: options.maxAttempts ?? 3,
      leaseMs: options.leaseMs ?? 10_000,
      reconcile: options.reconcile,
    }).run(handler)
    const server = createServer({ contract: chat, consumers: [c], store: options.on ?? store })
    servers.push(server)
    const { id: sessionId } = await server.sessions.create('u')
    const startWorker = (on?: Store) => {
      const s = on ? createServer({ contract: chat, consumers: [c], store: on }) : server
      if (on) servers.push(s)
      return s.startWorker({ pollMs: 50, graceMs: 400, ...options.worker })
    }
    const [generate] = await server.append(sessionId, { type: 'generate', payload: {} })
    const [{ id: jobId }] = await query<{ id: number }>(store.db, sql`select id from a2_jobs where event_id = ${generate.id} and consumer = ${name}`)
    const cancel = () => server.append(sessionId, { type: 'cancelled', payload: { of: generate.id, lastSeenIndex: 0 } })
    const host = (on: Store = store) => ({
      store: on,
      contract: chat,
      consumers: new Map([[name, c as never]]),
      append: () => Promise.reject(new Error('this drain appends nothing')),
    })
    return { name, server, sessionId, generate, jobId: Number(jobId), cancel, startWorker, host }
  }

  const effectsOf = (jobId: number) =>
    query<{ key: string; status: string; attempt: number }>(
      store.db,
      sql`select key, status, attempt from a2_effects where job_id = ${jobId} order by key`,
    )
  const effectOf = async (jobId: number, key: string) => (await effectsOf(jobId)).find((e) => e.key === key)

  /** `charge` is slow and not overlapSafe; `audit` throws as soon as it runs; the handler awaits both at once. */
  function chargeAndAudit(provider: ReturnType<typeof hold>) {
    const calls = { started: 0, running: 0, mostAtOnce: 0 }
    const handler: Handler = async (ctx) => {
      await Promise.all([
        ctx.effect('charge', async () => {
          calls.started++
          calls.mostAtOnce = Math.max(calls.mostAtOnce, ++calls.running)
          try {
            await provider.promise // ignores its signal: the provider has the request
            return 'receipt'
          } finally {
            calls.running--
          }
        }),
        ctx.effect('audit', async () => {
          throw new Error('audit refused')
        }),
      ])
    }
    return { calls, handler }
  }

  it('item 2 · the last attempt throws while its own call runs: the run waits for the call, which ends DONE, then FAILS', async () => {
    const provider = hold()
    const asked: string[] = []
    const { calls, handler } = chargeAndAudit(provider)
    const ticks = claimTicks(store)
    const s = await setup(handler, { maxAttempts: 1, reconcile: async (_k, { key }) => (asked.push(key), { done: false }), on: ticks.store })
    await s.startWorker()
    await waitUntil(async () => calls.started === 1 && (await effectOf(s.jobId, 'audit'))?.status === 'FAILED', 'charge running and audit failed')
    await ticks.more(4) // the attempt had its turns to end the run (it did, at once, before the fix)
    expect((await waitForJob(store, s.generate.id, s.name, () => true)).status).toBe('ACTIVE')
    expect((await effectOf(s.jobId, 'charge'))?.status).toBe('DISPATCHED')
    provider.open()
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'FAILED')
    expect(await effectsOf(s.jobId)).toMatchObject([
      { key: 'audit', status: 'FAILED' },
      { key: 'charge', status: 'DONE' },
    ])
    expect(asked).toEqual([]) // nothing was left in flight to ask about
    expect(await historyOf(store, s.jobId)).not.toContain('1:ACTIVE>ACTIVE:EFFECT_RECONCILED_NOT_DONE')
  })

  it('item 3 · a retry never dispatches a call that is not overlapSafe beside the failed attempt’s, still in flight', async () => {
    const provider = hold()
    const { calls, handler } = chargeAndAudit(provider)
    const ticks = claimTicks(store)
    const s = await setup(handler, { maxAttempts: 2, reconcile: async () => ({ done: false }), on: ticks.store })
    await s.startWorker()
    await waitUntil(async () => calls.started === 1 && (await effectOf(s.jobId, 'audit'))?.status === 'FAILED', 'charge running and audit failed')
    // A retry's backoff after attempt 1 is at most 250 ms; 10 ticks of 50 ms let it be claimed (it was, before the fix).
    await ticks.more(10)
    expect(calls.started).toBe(1)
    provider.open()
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'FAILED')
    expect(calls).toMatchObject({ started: 1, mostAtOnce: 1 })
    expect(await effectOf(s.jobId, 'charge')).toMatchObject({ status: 'DONE', attempt: 1 })
  })

  it('item 3 · a shutdown hands over a run inside a call that ignores its signal only once that call returned', async () => {
    const provider = hold()
    const calls = { started: 0, running: 0, mostAtOnce: 0 }
    const s = await setup(
      async (ctx) => {
        // The handler gives up at the signal; its call does not (the provider has the request).
        const charge = ctx.effect('charge', async () => {
          calls.started++
          calls.mostAtOnce = Math.max(calls.mostAtOnce, ++calls.running)
          try {
            await provider.promise
            return 'receipt'
          } finally {
            calls.running--
          }
        })
        await Promise.race([charge, aborted(ctx.signal).then((reason) => Promise.reject(reason))])
      },
      { reconcile: async () => ({ done: false }) },
    )
    const first = await s.startWorker()
    await waitUntil(() => calls.started === 1, 'charge to run')
    const ticks = claimTicks(store)
    await s.startWorker(ticks.store) // a second worker, ready to take the run the first hands over
    await first.stop() // SHUTDOWN: before the fix the run was surrendered at once, and taken and dispatched again
    await ticks.more(6)
    expect(calls.started).toBe(1)
    provider.open()
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'COMPLETED')
    expect(calls).toMatchObject({ started: 1, mostAtOnce: 1 })
  })

  /** A call that rejects at its run's abort, as an aborted fetch does, though its request may have reached the receiver. */
  const abortedMidCall =
    (options: { overlapSafe?: boolean } = {}): Handler =>
    async (ctx) => {
      await ctx
        .effect(
          'webhook',
          (_key, signal) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true })),
          options,
        )
        .catch(() => {})
    }
  const effectRow = async (jobId: number) =>
    (
      await query<{ status: string; result: unknown; error: Record<string, unknown> | null }>(
        store.db,
        sql`select status, result, error from a2_effects where job_id = ${jobId}`,
      )
    )[0]

  it('item 7 · a Stop mid-call of an effect that is not overlapSafe leaves it UNKNOWN (no hook to ask), never FAILED; an operator settles the run', async () => {
    const s = await setup(abortedMidCall())
    await s.startWorker()
    await waitUntil(async () => (await effectOf(s.jobId, 'webhook'))?.status === 'DISPATCHED', 'the call to be dispatched')
    await s.cancel()
    await waitForJob(store, s.generate.id, s.name, (j) => j.status !== 'ACTIVE' && j.status !== 'CANCELLING')
    expect(await effectRow(s.jobId)).toMatchObject({ status: 'UNKNOWN', error: { aborted: 'CANCELLED' } })
    expect((await waitForJob(store, s.generate.id, s.name, () => true)).status).toBe('UNKNOWN')
    await s.server.operator.resolveEffect(s.jobId, 'webhook', { done: true, result: 'delivered' }, 'operator')
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'CANCELLED')
  })

  it('item 7 · the receiver is asked: "done" records DONE, "not done" records FAILED with that answer; the run ends CANCELLED', async () => {
    for (const answer of [{ done: true, result: 'receipt' }, { done: false }] as const) {
      const asked: string[] = []
      const s = await setup(abortedMidCall(), { reconcile: async (idempotencyKey) => (asked.push(idempotencyKey), answer) })
      await s.startWorker()
      await waitUntil(async () => (await effectOf(s.jobId, 'webhook'))?.status === 'DISPATCHED', 'the call to be dispatched')
      await s.cancel()
      await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'CANCELLED')
      expect(asked).toEqual([`a2-${s.jobId}-webhook`])
      expect(await effectRow(s.jobId)).toMatchObject(
        answer.done
          ? { status: 'DONE', result: { value: 'receipt' } }
          : { status: 'FAILED', error: { aborted: 'CANCELLED', reconciled: 'not done' } },
      )
    }
  })

  it('item 7 · an overlapSafe call (the chat’s model call) stopped mid-call is FAILED with the abort’s code, as before', async () => {
    const s = await setup(abortedMidCall({ overlapSafe: true }))
    await s.startWorker()
    await waitUntil(async () => (await effectOf(s.jobId, 'webhook'))?.status === 'DISPATCHED', 'the call to be dispatched')
    await s.cancel()
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'CANCELLED')
    expect(await effectRow(s.jobId)).toMatchObject({ status: 'FAILED', error: { aborted: 'CANCELLED' } })
  })

  it('item 7 · an overlapSafe call whose append is refused for the Stop before its hint arrives is FAILED with the abort’s code too', async () => {
    // Under load the call's next chunk can reach the store after the Stop and before the Stop's
    // hint fires the signal: the store refuses it (run_cancelled) and the call throws with the
    // signal still unfired. The runs view reads `aborted` to show the call stopped, not FAILED red.
    let dropHints = false
    const worker = interceptStore(store, { dropNotifications: () => dropHints })
    const next = { gate: hold(), appended: 0 }
    const s = await setup(
      async (ctx) => {
        await ctx
          .effect(
            'model',
            async () => {
              for (;;) {
                await ctx.append({ type: 'chunk', payload: { of: ctx.event.id, delta: 'x' } })
                next.appended++
                await next.gate.promise
              }
            },
            { overlapSafe: true },
          )
          .catch(() => {})
      },
      { on: worker },
    )
    await s.startWorker()
    await waitUntil(() => next.appended === 1, 'the first chunk')
    dropHints = true // the Stop's hint is lost (or late): only the refused append can tell the call
    await s.cancel()
    next.gate.open()
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'CANCELLED')
    expect(await effectRow(s.jobId)).toMatchObject({ status: 'FAILED', error: { aborted: 'CANCELLED' } })
  })

  it('item 6 · a drain that resumes after the first died knows the forced-out attempt’s call may still run: UNKNOWN, FORCED_AFTER_GRACE, then its late outcome', async () => {
    const inFlight = hold()
    const provider = hold()
    const s = await setup(
      async (ctx) => {
        await ctx
          .effect('tool', async () => {
            inFlight.open()
            await provider.promise // ignores its signal
            return 'receipt'
          })
          .catch(() => {})
      },
      // The worker's own drain never forces it out: the test's drains do, by hand.
      { reconcile: async () => ({ done: false }), worker: { graceMs: 600_000 } },
    )
    await s.startWorker()
    await inFlight.promise
    await s.cancel()
    // Drain 1 forces the run out past its grace and takes it, then dies before its verdict.
    const dying = interceptStore(store, {
      after: (text) => {
        if (text.includes('cancelling_since = null')) throw new Error('drain 1 died after its take')
      },
    })
    await expect(drainOnce(s.host(dying), { owner: 'drain-1', graceMs: 0, forceOut: () => {} })).rejects.toThrow('drain 1 died')
    expect((await waitForJob(store, s.generate.id, s.name, () => true)).owner).toBe('drain-1')
    // Its lease runs out (a stand-in for the wait), and drain 2 resumes from the durable state alone.
    await query(store.db, sql`update a2_jobs set lease_until = now() - interval '1 millisecond' where id = ${s.jobId}`)
    await drainOnce(s.host(), { owner: 'drain-2', graceMs: 600_000, forceOut: () => {} })
    await waitForJob(store, s.generate.id, s.name, (j) => j.status !== 'CANCELLING')
    expect(await effectOf(s.jobId, 'tool')).toMatchObject({ status: 'UNKNOWN', attempt: 1 })
    expect((await waitForJob(store, s.generate.id, s.name, () => true)).status).toBe('UNKNOWN')
    const history = await historyOf(store, s.jobId)
    expect(history).toContain('1:CANCELLING>CANCELLING:FORCED_AFTER_GRACE')
    expect(history).not.toContain('2:CANCELLING>CANCELLED:DRAINED_AFTER_OWNER_LOST')
    provider.open()
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'CANCELLED')
    expect(await effectOf(s.jobId, 'tool')).toMatchObject({ status: 'DONE', attempt: 1 })
    expect(history.concat(await historyOf(store, s.jobId)).at(-1)).toMatch(/UNKNOWN>CANCELLED:EFFECT_RESOLVED_LATE$/)
  })

  it.each([
    ['the drain that forces it out', false],
    ['a drain that resumes after the first died', true],
  ])(
    'item 6 · an overlapSafe call (the chat’s model call) of a forced-out attempt is trusted "not done" by %s: the run ends CANCELLED, never UNKNOWN for an operator',
    async (_, firstDrainDies) => {
      const inFlight = hold()
      const provider = hold()
      const returned = hold()
      const s = await setup(
        async (ctx) => {
          await ctx
            .effect(
              'model',
              async () => {
                inFlight.open()
                await provider.promise // ignores its signal
                return 'text'
              },
              { overlapSafe: true },
            )
            .catch(() => {})
          returned.open()
        },
        { reconcile: async () => ({ done: false }), worker: { graceMs: 600_000 } },
      )
      await s.startWorker()
      await inFlight.promise
      await s.cancel()
      if (firstDrainDies) {
        const dying = interceptStore(store, {
          after: (text) => {
            if (text.includes('cancelling_since = null')) throw new Error('drain 1 died after its take')
          },
        })
        await expect(drainOnce(s.host(dying), { owner: 'drain-1', graceMs: 0, forceOut: () => {} })).rejects.toThrow('drain 1 died')
        await query(store.db, sql`update a2_jobs set lease_until = now() - interval '1 millisecond' where id = ${s.jobId}`)
        await drainOnce(s.host(), { owner: 'drain-2', graceMs: 600_000, forceOut: () => {} })
      } else {
        await drainOnce(s.host(), { owner: 'drain-1', graceMs: 0, forceOut: () => {} })
      }
      const run = await waitForJob(store, s.generate.id, s.name, (j) => j.status !== 'CANCELLING')
      expect(run.status).toBe('CANCELLED')
      expect(await effectOf(s.jobId, 'model')).not.toMatchObject({ status: 'UNKNOWN' })
      expect(await historyOf(store, s.jobId)).toContain('1:CANCELLING>CANCELLING:FORCED_AFTER_GRACE')
      // The forced-out call returns late: its outcome is fenced out, and the run stays CANCELLED.
      provider.open()
      await returned.promise
      expect(await effectOf(s.jobId, 'model')).not.toMatchObject({ status: 'DONE', attempt: 1 })
      expect((await waitForJob(store, s.generate.id, s.name, () => true)).status).toBe('CANCELLED')
    },
  )

  it('suspected 1 · a Stop whose NOTIFY lands after the claim committed and before the attempt is registered is held for that attempt: the run stops at once, not at its next renewal', async () => {
    let stopSent = false
    let hintsAfterStop = 0
    let s!: Awaited<ReturnType<typeof setup>>
    const firedAt: { ms?: number; code?: string } = {}
    const watched = interceptStore(store, {
      after: async (text) => {
        if (stopSent || !isClaim(text)) return
        const [job] = await query<{ attempt: number }>(store.db, sql`select attempt from a2_jobs where id = ${s.jobId}`)
        if (Number(job.attempt) !== 1) return
        // The claim of our run committed; its answer is not back in the worker yet. The Stop lands now.
        stopSent = true
        await s.cancel()
        await waitUntil(() => hintsAfterStop > 0, 'the Stop’s NOTIFY to reach the worker')
      },
      notified: () => {
        if (stopSent) hintsAfterStop++
      },
    })
    const started = performance.now()
    // A 30 s lease is renewed every 10 s: a signal that waits for the renewal comes long after the bound below.
    s = await setup(
      async (ctx) => {
        const reason = (await aborted(ctx.signal)) as { code?: string }
        firedAt.ms = performance.now() - started
        firedAt.code = reason.code
      },
      { on: watched, leaseMs: 30_000, worker: { graceMs: 600_000 } }, // no drain forces it out meanwhile
    )
    await s.startWorker()
    // Stopped within the bound: before its handler starts (the held hint reaches the attempt as it
    // registers) or, had it started, by its signal. Before the fix it ran on until the renewal.
    await waitForJob(store, s.generate.id, s.name, (j) => j.status === 'CANCELLED', 3_000)
    if (firedAt.ms !== undefined) expect(firedAt.code).toBe('CANCELLED')
    expect((await historyOf(store, s.jobId)).at(-1)).toMatch(/CANCELLING>CANCELLED:(CANCELLED_BEFORE_START|STOPPED_BY_CANCEL)$/)
  })
})
