/**
 * A dispatch by an attempt while that attempt's run is being ended. A handler that starts
 * `ctx.effect` and returns before it is dispatched (a call it did not await) ends its run
 * while the effect's dispatch compare-and-set is on its way. The ending (`endRuns`) decides
 * from the stored state of the run's effects; a dispatch it does not see leaves a terminal
 * run over a DISPATCHED effect — the stored state contradicting it, and nothing left to
 * reconcile it. The dispatch must be refused, or committed before the ending reads.
 *
 * fast-check draws how far the effect got (intent, read, dispatch) when the handler returns,
 * and on Postgres whether the dispatch is slow: held on its effect's row (a lock the test
 * holds) until the ending has gone out — or the attempt holds the ending back — so the two
 * statements overlap, the interleaving a statement-at-a-time driver cannot reach. The
 * provider answers only once the attempt's ending waits for the call (an attempt is not over
 * while a call of its runs: effects.ts, DispatchesInFlight) or the attempt is over without
 * one: a call made is always seen by the ending, however long it takes. PGlite and Postgres.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { consumer, createServer, type Store } from '@/lib/a2/server'
import { Attempt } from './internal/runtime/attempt'
import type { RuntimeHost } from './internal/runtime/runtime-host'
import { claimJobs } from './internal/runtime/jobs'
import { query } from './internal/store/store'
import { layers, useTestStore } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'
import { gate, interceptStore, waitUntil, type Gate } from './test-kit/runtime'

const RUNS = Number(process.env.FC_RUNS ?? 30)
const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : 20261202
const LEASE_MS = 600_000

/** The effect's statements, in the order runEffect sends them. */
const EFFECT_STATEMENTS: Array<[string, (text: string) => boolean]> = [
  ['intent', (t) => t.includes('insert into a2_effects')],
  ['read', (t) => t.includes('select status, attempt, result from a2_effects')],
  ['dispatch', (t) => t.includes("set status = 'DISPATCHED'")],
]

describe.each(layers)('a dispatch racing its own run’s ending, on %s', (kind) => {
  const store = useTestStore(kind)
  let base: Store
  let n = 0
  beforeAll(() => {
    base = store()
  })

  const lockWaits = async () =>
    (
      await query<{ n: number }>(
        base.db,
        sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
      )
    )[0].n

  async function scenario(returnAfter: number, stall: boolean) {
    const name = `ed${++n}`
    const returned = gate()
    const provider = gate()
    let called = 0
    let effect: Promise<unknown> | undefined
    const c = consumer({ contract: chat, name, types: ['generate'], maxAttempts: 3, leaseMs: LEASE_MS }).run(async (ctx) => {
      effect = ctx
        .effect('tool', async () => {
          called++
          await provider.promise
          return 'receipt'
        })
        .then(
          (v) => v,
          (e: { code?: string }) => e.code ?? String(e),
        )
      await returned.promise // returns without awaiting its effect
    })
    const server = createServer({ contract: chat, consumers: [c], store: base })
    const { id: sessionId } = await server.sessions.create('u')
    await server.append(sessionId, { type: 'generate', payload: {} })
    const [job] = await claimJobs(base.db, { consumers: [name], owner: 'w1', leaseMs: { [name]: LEASE_MS }, limit: 1 })

    // Each of the effect's statements waits at a gate the test opens; `answered` counts those done.
    const gates = EFFECT_STATEMENTS.map(() => gate())
    const arrived = EFFECT_STATEMENTS.map(() => gate())
    let answered = 0
    const gated = interceptStore(base, {
      before: async (text) => {
        const i = EFFECT_STATEMENTS.findIndex(([, is]) => is(text))
        if (i < 0) return
        arrived[i].open()
        await gates[i].promise
      },
      after: (text) => {
        if (EFFECT_STATEMENTS.some(([, is]) => is(text))) answered++
      },
    })
    const host: RuntimeHost = {
      store: gated,
      contract: chat,
      consumers: new Map([[name, c as never]]),
      append: () => Promise.reject(new Error('this attempt appends nothing')),
    }
    const attempt = new Attempt(host, job, c as never, 'w1', performance.now())
    let over = false
    void attempt.done.then(() => (over = true))

    const let_ = async (i: number) => {
      await Promise.race([arrived[i].promise, attempt.done])
      if (!arrived[i].opened) return
      gates[i].open()
      await waitUntil(
        async () => answered > i || over || (kind === 'postgres' && (await lockWaits()) > 0),
        `the effect's ${EFFECT_STATEMENTS[i][0]} to be answered`,
      )
    }
    for (let i = 0; i < returnAfter; i++) await let_(i)
    let held: { release: Gate; done: Promise<unknown> } | undefined
    if (stall && kind === 'postgres' && returnAfter === 2) {
      // The dispatch goes out and waits on its effect's row, holding the run's row (share) meanwhile.
      await Promise.race([arrived[2].promise, attempt.done])
      const locked = gate()
      const release = gate()
      const done = base.db.transaction(async (tx) => {
        await query(tx, sql`select 1 from a2_effects where job_id = ${job.id} and key = 'tool' for update`)
        locked.open()
        await release.promise
      })
      await locked.promise
      held = { release, done }
      gates[2].open()
      await waitUntil(async () => (await lockWaits()) > 0, 'the dispatch to wait on its effect’s row')
    }
    returned.open()
    if (held) {
      // Until the ending waits on the run's row behind the dispatch — or the attempt holds its ending back.
      await waitUntil(
        async () => over || (await lockWaits()) > 1 || attempt.dispatches.holdingBack,
        'the ending to go out, or to wait for the dispatch',
      )
      held.release.open()
      await held.done
    }
    for (let i = returnAfter; i < EFFECT_STATEMENTS.length; i++) gates[i].open()
    await waitUntil(() => over || attempt.dispatches.holdingBack, 'the ending to wait for the call, or the attempt to be over')
    if (!over) provider.open()
    await attempt.done
    const atEnd = {
      job: (await query<{ status: string }>(base.db, sql`select status from a2_jobs where id = ${job.id}`))[0].status,
      effects: await query<{ status: string }>(base.db, sql`select status from a2_effects where job_id = ${job.id}`),
    }
    provider.open()
    const outcome = await effect
    return { atEnd, called, outcome }
  }

  it(`a run never ends over an effect its own attempt dispatched meanwhile, over ${RUNS} drawn runs`, async () => {
    await fc.assert(
      // The dispatch is held on its row only when it is the statement in flight as the handler returns.
      fc.asyncProperty(fc.integer({ min: 0, max: 3 }), fc.boolean(), async (returnAfter, stall) => {
        const { atEnd, called, outcome } = await scenario(returnAfter, stall)
        const label = `handler returned after ${returnAfter} of the effect's statements${stall && returnAfter === 2 ? ', dispatch held on its row' : ''}: ${JSON.stringify(atEnd)}`
        if (['COMPLETED', 'FAILED', 'CANCELLED'].includes(atEnd.job)) {
          expect(
            atEnd.effects.filter((e) => e.status === 'DISPATCHED' || e.status === 'UNKNOWN'),
            label,
          ).toEqual([])
        }
        // A call that was made is recorded: the provider's answer is never lost.
        if (called > 0) expect(outcome, label).toBe('receipt')
      }),
      { numRuns: RUNS, seed: SEED, path: process.env.FC_PATH },
    )
  }, 120_000)

  it('held on its row: the dispatch in flight as the handler returns is seen by the ending, or the run is not ended', async () => {
    const { atEnd, called, outcome } = await scenario(2, true)
    expect(called).toBe(1)
    expect(outcome).toBe('receipt')
    // Dispatched before the ending: the ending waits for the call, and the run ends from its recorded outcome.
    expect(atEnd).toEqual({ job: 'COMPLETED', effects: [{ status: 'DONE' }] })
  })
})
