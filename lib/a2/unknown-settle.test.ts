/**
 * An UNKNOWN run settles once its last unresolved effect is resolved, whichever resolutions
 * race: an effect's late outcome (the forced-out attempt's call returns) and an operator's
 * verdict (`operator.resolveEffect`, a transaction), for two effects of one run at once. Each
 * resolution changes its effect's row and then tries to settle the run (effects.ts,
 * resolveUnknownRun); the last one to do so must see every other resolution, or the run stays
 * UNKNOWN for good with nothing left to resolve (its lane held with it, README §7, §10).
 *
 * fast-check draws who resolves each effect and the order in which the two sides' statements
 * (the operator's commit among them) reach the database; each statement waits at a gate the
 * test opens, so a seed replays its interleaving. A statement that waits on the other side
 * (a row lock on Postgres; PGlite's one connection while a transaction is open) is left
 * waiting while the other side goes on. PGlite and Postgres, like every runtime test.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { sql, type SQL } from 'drizzle-orm'
import { PgDialect } from 'drizzle-orm/pg-core'
import { consumer, createServer, RunAborted, type Store } from '@/lib/a2/server'
import { drainOnce } from './internal/runtime/drain'
import { runEffect } from './internal/runtime/effects'
import type { RuntimeHost } from './internal/runtime/runtime-host'
import { claimJobs } from './internal/runtime/jobs'
import { operator } from './internal/runtime/operator'
import { query, type Executor } from './internal/store/store'
import { layers, useTestStore } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'
import { gate, interceptStore, waitUntil, type Gate } from './test-kit/runtime'

/** Before the fix, Postgres left the run UNKNOWN at run 8 of these 40 (an operator verdict and a late outcome); FC_RUNS=… explores more. */
const RUNS = Number(process.env.FC_RUNS ?? 40)
const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : 20261202
const LEASE_MS = 600_000
const dialect = new PgDialect()

/** One side of the race: its statements each wait at a gate until the test lets them through. */
class Side {
  /** The statement waiting at the gate, if any. */
  waiting?: { text: string; go: Gate }
  /** Inside a transaction of its own (the operator's), from BEGIN until its COMMIT is answered. */
  txOpen = false
  finished = false
  /** Off while the run is set up: only the resolutions go through the gate. */
  gated = false
  /** A statement was let through and is not answered yet (it may wait on the other side). */
  inFlight = false
  /** How many of its statements were answered. */
  answered = 0
  private changed = gate()
  constructor(readonly name: string) {}
  /** Resolves at the side's next change: a statement arrives, is answered, or the side finishes. */
  next(): Promise<void> {
    return this.changed.promise
  }
  touch() {
    const g = this.changed
    this.changed = gate()
    g.open()
  }
  async pass<T>(text: string, run: () => Promise<T>): Promise<T> {
    if (this.gated) {
      const go = gate()
      this.waiting = { text, go }
      this.touch()
      await go.promise
      this.waiting = undefined
      this.inFlight = true
    }
    try {
      return await run()
    } finally {
      if (this.gated) this.answered++
      this.inFlight = false
      this.touch()
    }
  }
}

/** The same database, every statement (inside a transaction too, and its commit) through `side`'s gate. */
function gatedStore(store: Store, side: Side): Store {
  const gated = (executor: Executor): Executor => ({
    execute: ((statement: SQL) => side.pass(short(dialect.sqlToQuery(statement).sql), () => executor.execute(statement))) as Executor['execute'],
  })
  const db = new Proxy(store.db, {
    get(target, prop, receiver) {
      if (prop === 'execute') return gated(target).execute
      if (prop === 'transaction') {
        return (fn: (tx: Executor) => Promise<unknown>) =>
          target
            .transaction(async (tx) => {
              side.txOpen = true
              const out = await fn(gated(tx))
              // The commit is sent when this returns: it waits at the gate like a statement.
              await side.pass('commit', async () => {})
              return out
            })
            .finally(() => {
              side.txOpen = false
              side.touch()
            })
      }
      const value = Reflect.get(target, prop, receiver)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  return { kind: store.kind, db, listen: store.listen.bind(store), close: async () => {} }
}

function short(text: string): string {
  const t = text.replace(/\s+/g, ' ')
  if (t.includes('a2_effects set status')) return 'update effect'
  if (t.includes('target as')) return 'verdict'
  if (t.includes('with run as')) return 'settle run'
  if (t.includes('with candidates as')) return 'take'
  if (t.includes("status = 'DISPATCHED' order by key")) return 'read in flight'
  if (t.includes('jsonb_to_recordset')) return 'finish runs'
  return t.slice(0, 40)
}

type Resolver = 'late' | 'operator'

describe.each(layers)('an UNKNOWN run with two unresolved effects, resolved at once, on %s', (kind) => {
  const store = useTestStore(kind)
  let base: Store
  let n = 0

  beforeAll(() => {
    base = store()
  })

  /**
   * A run UNKNOWN the way the forced path leaves it: attempt 1 dispatched e1 and e2 and is
   * still inside both when a Stop lands and the drain forces it out after the grace period;
   * the effects may still be running, so both are UNKNOWN, and so is the run. Effect i's
   * statements (its late outcome) pass side i's gate.
   */
  async function unknownRun(sides: Side[]) {
    const run = await forcedOut(sides.map((side) => gatedStore(base, side)))
    await run.drain(base)
    expect(await jobStatus(run.jobId)).toBe('UNKNOWN')
    expect(await effectsOf(run.jobId)).toEqual([
      { key: 'e1', status: 'UNKNOWN' },
      { key: 'e2', status: 'UNKNOWN' },
    ])
    return run
  }

  /** Attempt 1 inside e1, e2 … (one per store, each through it), a Stop recorded; `drain` forces it out. */
  async function forcedOut(stores: Store[]) {
    const name = `us${++n}`
    const c = consumer({ contract: chat, name, types: ['generate'], abortOn: ['cancelled'], maxAttempts: 2, leaseMs: LEASE_MS }).run(async () => {})
    const server = createServer({ contract: chat, consumers: [c], store: base })
    const { id: sessionId } = await server.sessions.create('u')
    const [generate] = await server.append(sessionId, { type: 'generate', payload: {} })
    const [job] = await claimJobs(base.db, { consumers: [name], owner: 'w1', leaseMs: { [name]: LEASE_MS }, limit: 1 })
    const controller = new AbortController()
    const entered = stores.map(() => gate())
    const answer = stores.map(() => gate())
    const outcomes = stores
      .map((_, i) => `e${i + 1}`)
      .map((key, i) =>
        runEffect(
          stores[i].db,
          { fence: { jobId: job.id, attempt: job.attempt }, cancelVersion: job.cancelVersion, signal: controller.signal },
          key,
          async () => {
            entered[i].open()
            await answer[i].promise // stubborn: its signal does not stop it
            return `result ${key}`
          },
        ),
      )
    await Promise.all(entered.map((g) => g.promise))
    await server.append(sessionId, { type: 'cancelled', payload: { of: generate.id, lastSeenIndex: 0 } })
    const host = (store: Store): RuntimeHost => ({
      store,
      contract: chat,
      consumers: new Map([[name, c as never]]),
      append: () => Promise.reject(new Error('this drain appends nothing')),
    })
    // A grace period of 0 is over once the database's clock has moved past the Stop (PGlite's may not have yet).
    await waitUntil(
      async () => (await query<{ due: boolean }>(base.db, sql`select cancelling_since < now() as due from a2_jobs where id = ${job.id}`))[0].due,
      'the grace period to be over',
    )
    const drain = (store: Store) =>
      drainOnce(host(store), { owner: 'drain', graceMs: 0, forceOut: () => controller.abort(new RunAborted('FENCED_OUT')) })
    return { jobId: job.id, answer, outcomes, drain }
  }

  const jobStatus = async (jobId: number) => (await query<{ status: string }>(base.db, sql`select status from a2_jobs where id = ${jobId}`))[0].status
  const effectsOf = (jobId: number) =>
    query<{ key: string; status: string }>(base.db, sql`select key, status from a2_effects where job_id = ${jobId} order by key`)

  /**
   * Lets the sides' statements through one at a time, in the drawn order, until both are done.
   * After each, waits until it is answered — or, when the other side holds a transaction open
   * and something waits on it, goes on without it (it is answered once the other side commits).
   */
  async function drive(sides: Side[], order: boolean[]): Promise<string[]> {
    const trace: string[] = []
    for (let step = 0; ; step++) {
      const changed = Promise.race(sides.map((s) => s.next()))
      if (sides.every((s) => s.finished)) return trace
      const ready = sides.filter((s) => s.waiting)
      // Pick only once every side has come to a gate or waits on the other (PGlite: anything sent
      // while the other side's transaction is open, its BEGIN too): a side still on its way to its
      // next statement (a BEGIN's round trip) would otherwise never be drawn first.
      const blocked = (s: Side) => s.inFlight || (kind === 'pglite' && sides.some((o) => o !== s && o.txOpen))
      const settled = sides.every((s) => s.finished || s.waiting || blocked(s))
      if (ready.length === 0 || !settled) {
        await changed
        continue
      }
      const pick = ready.length === 1 ? ready[0] : ready[order[step % order.length] ? 1 : 0]
      const other = sides.find((s) => s !== pick)!
      const { text, go } = pick.waiting!
      trace.push(`${pick.name}: ${text}`)
      const answeredBefore = pick.answered
      go.open()
      await waitUntil(
        async () =>
          text === 'commit' ? !pick.txOpen : pick.answered > answeredBefore || (other.txOpen && (kind === 'pglite' || (await lockWaits()) > 0)),
        `${pick.name}'s "${text}" to be answered or to wait on ${other.name}`,
      )
    }
  }

  const lockWaits = async () =>
    (
      await query<{ n: number }>(
        base.db,
        sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
      )
    )[0].n

  it(
    `settles it once both are resolved, over ${RUNS} drawn interleavings`,
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.tuple(fc.constantFrom<Resolver>('late', 'operator'), fc.constantFrom<Resolver>('late', 'operator')),
          fc.tuple(fc.boolean(), fc.boolean()),
          // Which side's waiting statement goes next, step by step (the other's when that side has none).
          fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }),
          async (resolvers, verdicts, order) => {
            const sides = [new Side('a'), new Side('b')]
            const run = await unknownRun(sides)
            for (const s of sides) s.gated = true
            const done = resolvers.map(async (resolver, i) => {
              const side = sides[i]
              try {
                if (resolver === 'late') {
                  run.answer[i].open()
                  await run.outcomes[i]
                } else {
                  const verdict = { done: verdicts[i], result: verdicts[i] ? 'r' : undefined }
                  await operator(gatedStore(base, side)).resolveEffect(run.jobId, `e${i + 1}`, verdict, 'op')
                }
              } finally {
                side.finished = true
                side.touch()
              }
            })
            const trace = await drive(sides, order)
            await Promise.all(done)
            // An effect the operator resolved answers late too: refused, the operator's verdict stands.
            for (const s of sides) s.gated = false
            for (const g of run.answer) g.open()
            const late = await Promise.allSettled(run.outcomes)
            late.forEach((outcome, i) => expect(outcome.status).toBe(resolvers[i] === 'late' ? 'fulfilled' : 'rejected'))
            const effects = await effectsOf(run.jobId)
            expect(effects.filter((e) => e.status === 'UNKNOWN' || e.status === 'DISPATCHED')).toEqual([])
            // A Stop was recorded against the run: with nothing left unresolved it is CANCELLED.
            expect(await jobStatus(run.jobId), `${resolvers.join(' + ')}: ${trace.join(' → ')}`).toBe('CANCELLED')
          },
        ),
        { numRuns: RUNS, seed: SEED, path: process.env.FC_PATH },
      )
    },
    Math.max(60_000, RUNS * 2_000),
  )
  /**
   * The drain takes the forced-out run and settles it (take, reconcile, endRuns) while the
   * attempt's late outcome for its one effect arrives (record, settle). Whichever commits
   * second must settle the run, at once: no later drain tick, no lease waited for. Before the
   * fix, the late outcome landing between the drain's read of the DISPATCHED effects and its
   * verdict on one made that verdict's statement find nothing to change; the drain took that
   * for a lost claim and left the run CANCELLING, held under its own lease (15 s for the
   * app's generate consumer) until a later drain took it again.
   */
  it(
    `a late outcome racing the drain settles the run without waiting, over ${RUNS} drawn interleavings`,
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }), async (order) => {
          const late = new Side('late')
          const drainer = new Side('drain')
          const run = await forcedOut([gatedStore(base, late)])
          for (const s of [late, drainer]) s.gated = true
          const done = [
            (async () => {
              run.answer[0].open()
              await run.outcomes[0]
            })(),
            run.drain(gatedStore(base, drainer)),
          ].map((p, i) =>
            p.finally(() => {
              const side = [late, drainer][i]
              side.finished = true
              side.touch()
            }),
          )
          const trace = await drive([late, drainer], order)
          await Promise.all(done)
          for (const s of [late, drainer]) s.gated = false
          // Read at once: one drain tick and one late outcome, nothing after them.
          expect(await effectsOf(run.jobId)).toEqual([{ key: 'e1', status: 'DONE' }])
          expect(await jobStatus(run.jobId), trace.join(' → ')).toBe('CANCELLED')
        }),
        { numRuns: RUNS, seed: SEED, path: process.env.FC_PATH },
      )
    },
    Math.max(60_000, RUNS * 2_000),
  )

  /**
   * The same window on a successor's path: attempt 2 reaches an effect attempt 1 (its lease
   * lapsed, its call still out) left DISPATCHED, and attempt 1's outcome commits between
   * attempt 2's read of the effect and its verdict (the reconcile hook is that moment). The
   * recorded outcome is the answer: replayed, not called again, and not a `fenced` failure
   * that would leave the run to its lease.
   */
  it('a late outcome landing while a successor reconciles the effect is replayed to it', async () => {
    const name = `us${++n}`
    const c = consumer({ contract: chat, name, types: ['generate'], maxAttempts: 3, leaseMs: LEASE_MS }).run(async () => {})
    const server = createServer({ contract: chat, consumers: [c], store: base })
    const { id: sessionId } = await server.sessions.create('u')
    await server.append(sessionId, { type: 'generate', payload: {} })
    const claim = (owner: string) => claimJobs(base.db, { consumers: [name], owner, leaseMs: { [name]: LEASE_MS }, limit: 1 })
    const [first] = await claim('w1')
    const entered = gate()
    const answer = gate()
    const late = runEffect(
      base.db,
      { fence: { jobId: first.id, attempt: first.attempt }, cancelVersion: 0, signal: new AbortController().signal },
      'tool',
      async () => {
        entered.open()
        await answer.promise
        return 'receipt'
      },
    )
    await entered.promise
    // Attempt 1's lease runs out (the clock driven by hand): a claim takes the run over.
    await query(base.db, sql`update a2_jobs set lease_until = now() - interval '1 millisecond' where id = ${first.id}`)
    const [second] = await claim('w2')
    expect(second.attempt).toBe(first.attempt + 1)
    let calledAgain = 0
    const value = await runEffect(
      base.db,
      {
        fence: { jobId: second.id, attempt: second.attempt },
        cancelVersion: 0,
        signal: new AbortController().signal,
        reconcile: async () => {
          answer.open()
          await late // recorded DONE before the verdict goes out
          return { done: false }
        },
      },
      'tool',
      async () => {
        calledAgain++
        return 'again'
      },
    )
    expect(value).toBe('receipt')
    expect(calledAgain).toBe(0)
    expect(await effectsOf(second.id)).toEqual([{ key: 'tool', status: 'DONE' }])
  })

  /**
   * The drain ends the forced-out run (endRuns) while the attempt's late outcomes arrive:
   * e1's is recorded before the drain's ending and e2's after it starts and before it
   * commits. The ending decides from the effects as last committed, or it calls the run
   * UNKNOWN for an effect already DONE, whose own settle found the run not yet UNKNOWN and
   * left it: UNKNOWN for good. On Postgres the ending is held on the run's row (a lock the
   * test holds) while e2's outcome commits; PGlite runs one statement at a time, so there it
   * only checks the same steps in order.
   */
  it('an ending in flight sees a late outcome that committed meanwhile', async () => {
    const stores = [base, base]
    const run = await forcedOut(stores)
    run.answer[0].open()
    await run.outcomes[0]
    let holding: Promise<unknown> | undefined
    const drainStore = interceptStore(base, {
      before: async (text) => {
        if (!text.includes('jsonb_to_recordset') || holding) return
        if (kind === 'pglite') {
          holding = Promise.resolve()
          return
        }
        const locked = gate()
        const release = gate()
        holding = base.db.transaction(async (tx) => {
          await query(tx, sql`select id from a2_jobs where id = ${run.jobId} for update`)
          locked.open()
          await release.promise
        })
        await locked.promise
        // The ending goes out now and waits on the run's row; e2's outcome commits meanwhile.
        void (async () => {
          await waitUntil(async () => (await lockWaits()) > 0, "the drain's ending to wait on the run's row")
          run.answer[1].open()
          await run.outcomes[1]
          release.open()
        })()
      },
    })
    await run.drain(drainStore)
    await holding
    if (kind === 'pglite') {
      run.answer[1].open()
      await run.outcomes[1]
    }
    expect(await effectsOf(run.jobId)).toEqual([
      { key: 'e1', status: 'DONE' },
      { key: 'e2', status: 'DONE' },
    ])
    expect(await jobStatus(run.jobId)).toBe('CANCELLED')
  })
})
