/**
 * `ctx.end` against a Stop, in every order fast-check's scheduler draws for their statements:
 * an attempt whose handler appends its steps and then ends with its terminal event, and a
 * client's Stop (its read and its append), let through one statement at a time in a drawn order.
 * The handler ignores its signal on purpose: a model that got to its end before the Stop reached
 * it, which is the ordering where the terminal event and the run's record used to disagree.
 *
 * Invariants, whatever the order: one terminal event; it says `completed` exactly when the run
 * ended COMPLETED and `cancelled` exactly when it ended CANCELLED; no step lands after the Stop's
 * event; a Stop that landed after the terminal event recorded no cancel on the run (it was late).
 * PGlite and Postgres. FC_RUNS, FC_SEED and FC_PATH replay a run.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { z } from 'zod'
import { sql } from 'drizzle-orm'
import { defineContract, isA2Error } from '@/lib/a2'
import { consumer, createServer } from '@/lib/a2/server'
import { Attempt } from './internal/runtime/attempt'
import { validateInput } from './internal/core/contract'
import type { RuntimeHost } from './internal/runtime/runtime-host'
import { claimJobs } from './internal/runtime/jobs'
import { append } from './internal/log/append'
import { query } from './internal/store/store'
import { layers, useTestStore } from './test-kit/db'
import { interceptStore } from './test-kit/runtime'

const RUNS = Number(process.env.FC_RUNS ?? 25)
const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : 20261206
const LEASE_MS = 600_000

const contract = defineContract({
  events: {
    generate: { schema: z.object({}).strict(), push: true },
    chunk: { schema: z.object({ of: z.string(), delta: z.string() }), stepOf: (p: { of: string }) => p.of },
    done: { schema: z.object({ of: z.string(), reason: z.enum(['completed', 'cancelled']) }) },
    cancelled: { schema: z.object({ of: z.string() }), push: true },
  },
  maxPayloadBytes: 2048,
})

describe.each(layers)('ctx.end against a Stop, on %s', (kind) => {
  const store = useTestStore(kind)
  let n = 0

  async function scenario(scheduler: fc.Scheduler, steps: number, stopAfterSteps: number) {
    const base = store()
    /** Steps the handler has appended (or had refused) so far; `reached` once they are `stopAfterSteps`. */
    let appended = 0
    let reach = () => {}
    const reached = new Promise<void>((resolve) => (reach = resolve))
    if (stopAfterSteps === 0) reach()
    const name = `end${++n}`
    const c = consumer({
      contract,
      name,
      types: ['generate'],
      leaseMs: LEASE_MS,
      abortOn: { cancelled: (event, trigger) => event.payload.of === trigger.id },
    }).run(async (ctx) => {
      const of = ctx.event.id
      for (let i = 0; i < steps; i++) {
        await ctx.append({ type: 'chunk', payload: { of, delta: `c${i}` } }).catch((error: unknown) => {
          if (!isA2Error(error, 'run_cancelled')) throw error
        })
        if (++appended === stopAfterSteps) reach()
      }
      const done = (reason: 'completed' | 'cancelled') => ({ id: `done-${ctx.jobId}`, type: 'done' as const, payload: { of, reason } })
      await ctx.end({ completed: [done('completed')], cancelled: [done('cancelled')] })
    })
    const scheduled = (who: string) =>
      interceptStore(base, { before: (text) => scheduler.schedule(Promise.resolve(), `${who}: ${text.replace(/\s+/g, ' ').slice(0, 50)}`) })
    const server = createServer({ contract, consumers: [c], store: scheduled('stop') })
    const direct = createServer({ contract, consumers: [c], store: base })
    const { id: sessionId } = await direct.sessions.create('u')
    const [trigger] = await direct.append(sessionId, { type: 'generate', payload: {} })
    const [job] = await claimJobs(base.db, { consumers: [name], owner: 'w1', leaseMs: { [name]: LEASE_MS }, limit: 1 })
    const workerStore = scheduled('worker')
    const host: RuntimeHost = {
      store: workerStore,
      contract,
      consumers: new Map([[name, c as never]]),
      append: (sid, inputs, options) =>
        append(
          workerStore,
          direct.routing,
          sid,
          // As the server prepares a worker's events: a step names its run (refused once it is cancelled).
          inputs.map((input) => {
            const valid = validateInput(contract, input, 'server')
            return valid.type === 'chunk' ? { ...valid, stepOf: (valid.payload as { of: string }).of } : valid
          }),
          options,
        ),
    }

    // The Stop goes out once the handler has appended `stopAfterSteps` steps (or at once): from
    // there on, the scheduler orders its statements against the attempt's.
    const stopping = (async () => {
      await reached
      await server.push(sessionId, 'u', { id: 'stop', type: 'cancelled', payload: { of: trigger.id } })
    })()
    const attempt = new Attempt(host, job, c as never, 'w1', performance.now())
    await scheduler.waitFor(Promise.all([attempt.done, stopping]))
    await scheduler.waitIdle()

    const [run] = await query<{ status: string; cancelled: boolean }>(
      base.db,
      sql`select status, cancelled_by is not null as cancelled from a2_jobs where id = ${job.id}`,
    )
    const log = await direct.read(sessionId, 'u', { limit: 1000 })
    return { run, log }
  }

  it(`the terminal event and the run agree, over ${RUNS} drawn interleavings`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 3 }), async (scheduler, steps, stopAt) => {
        const { run, log } = await scenario(scheduler, steps, Math.min(stopAt, steps))
        const label = `${scheduler.report().length} scheduled; run ${JSON.stringify(run)}; log ${log.map((e) => e.type).join(',')}`
        const done = log.filter((e) => e.type === 'done')
        expect(done, label).toHaveLength(1)
        const { reason } = done[0].payload as { reason: string }
        expect(run.status, label).toBe(reason === 'completed' ? 'COMPLETED' : 'CANCELLED')
        const stop = log.find((e) => e.type === 'cancelled')!
        expect(
          log.filter((e) => e.type === 'chunk' && e.index > stop.index),
          label,
        ).toEqual([])
        // A Stop after the terminal event is a late one: nothing was cancelled.
        if (stop.index > done[0].index) expect(run, label).toEqual({ status: 'COMPLETED', cancelled: false })
      }),
      { numRuns: RUNS, seed: SEED, path: process.env.FC_PATH },
    )
  }, 120_000)
})
