/**
 * The cancellation contract, explored: fast-check generates command sequences — push a
 * generation, claim, renew, lease lapse, kill a worker (idle or holding an effect), dispatch
 * an effect, the effect completes, return, throw, throw while an effect's call is in flight
 * (the call completes later), a drain that dies after its take, a Stop pushed (its hint delivered or lost;
 * errored pushes kept in the client's outbox and pushed again, same id), a claim racing a
 * Stop and two drains at once (statements interleaved by fast-check's scheduler), a retry's
 * backoff running out, an operator's verdict, and a database outage (it goes away at a
 * chosen statement, refusing it or losing its answer, and comes back: test-kit/state-models/outage.ts says
 * how, the same on both stores) — and runs them against the real runtime (Attempt, drain,
 * endRuns, the log, push) on PGlite, and on Postgres when TEST_DATABASE_URL is set. After
 * every step the invariants below are checked against the database and a small reference
 * model. Time passes only when a command says so: leases outlive a sequence, and a retry's
 * backoff is held until `retry comes due` (else a claim would take it or not by the clock).
 *
 * Replay: a failure prints `{ seed, path }` and the shrunk command list; run it again with
 *   FC_SEED=<seed> FC_PATH=<path> FC_REPLAY_PATH=<replayPath> npx vitest run lib/a2/interleavings.test.ts -t "on <store> holds"
 * (-t "interleavings on pglite holds" or "… on postgres holds": the path is the failing store's).
 * `npm test` runs FC_RUNS (default 300) sequences of up to 50 commands per store from the fixed
 * seed below (14 s on PGlite, 16 s on Postgres at load 6; at load 15, with 40 commands, 40 s and
 * 66 s). Explore new seeds:
 *   FC_EXPLORE=1 FC_RUNS=N npx vitest run lib/a2/interleavings.test.ts
 *
 * Invariants:
 *   1. no effect is dispatched after a Stop against its run was recorded;
 *   2. a terminal run has no effect DISPATCHED or UNKNOWN — nor one INTENT or FAILED whose call
 *      may still be running (13 checks that half: the database cannot tell);
 *   3. no handler starts unsignalled after a Stop against its run was recorded;
 *   4. at most one live (unsignalled, not dead) attempt per job and per lane;
 *   5. every log stays gapless;
 *   6. every status change has its transition row (the history replays to the status), and a
 *      terminal status never changes again;
 *   7. a lane runs in log order, one open run at a time: a claim takes a job only once every
 *      earlier job of its lane is settled, never one earlier than a job already started; and
 *      an open job's lane_blocked flag (all the claim reads) says exactly that an earlier job
 *      of its lane is open;
 *   8. a run's history never goes back in attempts: every change is made by the attempt that
 *      holds the run or a later one (a superseded attempt's ending — run endings share a
 *      statement, internal/runtime/end-runs.ts — is fenced out row by row); no history row a step
 *      writes names an attempt older than the one that held the run before the step; and an
 *      effect's call starts only while its attempt holds the run ACTIVE (an effect's late
 *      outcome is the one write a superseded attempt makes, by design: §6's delivery record);
 *   9. a Stop whose push was acknowledged is never lost: its event is in the log, and a Stop
 *      that landed while its run was not over left its abort recorded (cancelled_by) and the
 *      run CANCELLING, CANCELLED or UNKNOWN — never ACTIVE, COMPLETED or FAILED again; and a
 *      Stop pressed while its run is open (ACTIVE, or UNKNOWN with no Stop recorded) is never
 *      finally refused, the cap near or not (`the cap is near`: the session's caps are set
 *      at what it holds, so every later push is past them);
 *  10. a push that errored wrote nothing or everything: its event with its job (a generation)
 *      or its recorded cancel (a Stop), or neither, and the head moved by exactly that;
 *  11. a retry is revoked exactly when a Stop lands while the run waits for it: the run's
 *      history leaves CANCELLING by RETRY_REVOKED at that attempt (EFFECT_UNKNOWN while an
 *      effect of it is unresolved), no other history says RETRY_REVOKED, and a revoked run
 *      never starts another attempt;
 *  12. a claim that read a Stop (a claim racing one) never starts its handler;
 *  13. an effect whose call may still be running (its fn entered and not returned, with no kill
 *      or lapsed lease to prove it stopped: test-kit/state-models/effects.ts) is never INTENT, FAILED or
 *      reconciled "not done" under a terminal run, and is never dispatched twice at once unless
 *      it is overlapSafe.
 * Invariant 2 is "a run ends terminal only from its effects' stored state", 5 "logs stay
 * gapless", both after outages too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { consumer, createServer, RunAborted, abortReason, type A2Server, type SessionCaps, type Store } from '@/lib/a2/server'
import { isA2Error } from '@/lib/a2'
import { Attempt } from './internal/runtime/attempt'
import { validateInput } from './internal/core/contract'
import { drainOnce } from './internal/runtime/drain'
import type { RuntimeHost } from './internal/runtime/runtime-host'
import { claimJobs, type ClaimedJob } from './internal/runtime/jobs'
import type { Liveness } from './internal/runtime/liveness'
import { append } from './internal/log/append'
import { query } from './internal/store/store'
import { createTestDb, layers, type TestDb } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'
import { gate, interceptStore, type Gate } from './test-kit/runtime'
import { OutageSwitch, outageStore, type Fault } from './test-kit/state-models/outage'
import { CallsInFlight, checkCallsInFlight } from './test-kit/state-models/effects'

const RUNS = Number(process.env.FC_RUNS ?? 300)
/** `npm test` replays one fixed budget (the same 300 sequences every time); exploring draws new seeds. */
const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : process.env.FC_EXPLORE ? undefined : 20261201
const PATH = process.env.FC_PATH
/** The command list's own shrink state: printed as `replayPath="…"` at the end of the counterexample. */
const REPLAY_PATH = process.env.FC_REPLAY_PATH
/** Leases no timer reaches within a run: time passes only when a command says so. */
const LEASE_MS = 600_000
const TERMINAL = new Set(['COMPLETED', 'CANCELLED', 'FAILED'])
const OPEN = new Set(['ACTIVE', 'CANCELLING', 'UNKNOWN'])

type Action = 'dispatch' | 'return' | 'throw'
/** What a handler throws out of an effect it awaits (`throw mid-effect`): its call goes on. */
const ABANDONED = Symbol('abandoned')

/** One attempt as the harness drives it: its handler parks between actions the commands send. */
class Driven {
  entered = false
  ended = false
  /** The attempt is over: handler done (or never started) and its outcome recorded. */
  over = false
  inEffect = false
  signal?: AbortSignal
  private mailbox: Array<Gate<Action>> = []
  effect?: Gate
  /** Opened by `throw mid-effect`: the handler throws out of the effect it awaits, its call left running. */
  abandon = gate()
  /** Calls the handler left running when it threw (their provider answers by `left call completes`). */
  orphans: Gate[] = []
  /** Resolves whenever the handler parks, enters an effect or ends: a command waits for one of these. */
  private moved = gate()
  constructor(
    readonly worker: number,
    readonly jobId: number,
    readonly attempt: number,
    readonly lane: string | null,
  ) {}
  notify() {
    const g = this.moved
    this.moved = gate()
    g.open()
  }
  nextMove(): Promise<void> {
    return this.moved.promise
  }
  send(action: Action) {
    this.mailbox[0]?.open(action)
  }
  receive(): Promise<Action> {
    const g = gate<Action>()
    this.mailbox = [g]
    return g.promise
  }
  /** Running with its signal quiet: it believes it holds the job. */
  get running(): boolean {
    return this.entered && !this.ended && !this.signal?.aborted
  }
}

interface World {
  kind: 'pglite' | 'postgres'
  base: Store
  server: A2Server<typeof chat>
  name: string
  sessionId: string
  /** Whether the run's handlers ignore their signal (the forced path), and whether reconcile can look effects up. */
  stubborn: boolean
  truthfulReconcile: boolean
  /**
   * Whether its effects are overlapSafe (the chat's model call is): a run inside one is released
   * as soon as its owner is judged gone; inside any other, it waits for its lease.
   */
  overlapSafe: boolean
  workers: WorkerSim[]
  jobs: Array<{ eventId: string; jobId: number }>
  attempts: Driven[]
  /**
   * Reference model: jobs the user stopped while they were not over (status read just
   * before the Stop was appended). The contract says each of these Stops is recorded and
   * honoured, whatever the status it met — the model does not ask the runtime whether it was.
   */
  cancelRecorded: Set<number>
  /** Effect keys whose fn was entered: the provider got the request. */
  happened: Set<string>
  /** Effect keys whose call the provider completed (its fn's provider answered). */
  completed: Set<string>
  violations: string[]
  step: number
  /** The database, as every process of the sequence reaches it (test-kit/state-models/outage.ts). */
  outage: OutageSwitch
  /** The effect calls that may still be running (test-kit/state-models/effects.ts, invariant 13). */
  calls: CallsInFlight
  /** Every Stop the user pressed, in order; `outbox`: those whose push was not acknowledged yet. */
  stops: Stop[]
  outbox: Stop[]
  /** Model: jobs whose Stop landed while they waited for a retry, and the attempt that failed. */
  revoked: Map<number, number>
  /** Retries whose backoff the harness holds (job:attempt): time passes only by command. */
  heldRetries: Map<string, 'held' | 'due'>
  /** Each job's attempt as the last check saw it: a step's history rows may not name an older one. */
  attemptSeen: Map<number, number>
  /** Each job's status as the last check saw it (what a command's precondition may look at). */
  statusSeen: Map<number, string>
  /** Jobs the last check saw waiting for a retry. */
  waitingSeen: Set<number>
  /** The newest history row id the last check saw. */
  lastTransition: number
  /** While set, the server's statements (pushes) go through fast-check's scheduler too. */
  serverScheduler?: fc.Scheduler
  /** The session's caps, once `the cap is near` set them at what the session held: a Stop is pushed with them. */
  caps?: SessionCaps
}

/** A Stop as the browser's outbox holds it: one client id, pushed until acknowledged. */
interface Stop {
  id: string
  jobId: number
  /** The generation it stops. */
  of: string
  acked: boolean
  /** The status its run had when the Stop landed in the log (undefined: not landed yet). */
  landedOn?: string
}

interface WorkerSim {
  index: number
  id: string
  store: Store
  dead: boolean
  host: RuntimeHost
  liveness: Liveness
  /** While set, this worker's statements go through fast-check's scheduler (a concurrent drain). */
  scheduler?: fc.Scheduler
}

describe.each(layers)('interleavings on %s', (kind) => {
  let testDb: TestDb
  let base: Store
  let n = 0

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    base = await testDb.open()
  })
  afterAll(async () => {
    await testDb.drop()
  })

  async function makeWorld(stubborn: boolean, truthfulReconcile: boolean, overlapSafe = false): Promise<World> {
    const name = `il${++n}`
    const world = {} as World
    const c = consumer({
      contract: chat,
      name,
      types: ['generate'],
      lane: 'gen',
      maxAttempts: 2,
      leaseMs: LEASE_MS,
      abortOn: { cancelled: (event, trigger) => event.payload.of === trigger.id },
      reconcile: truthfulReconcile
        ? // The receiver knows the calls it completed: one still in flight is "not done" to it, as a
          // provider that has not committed a request yet answers (what makes "not done" no proof).
          async (idempotencyKey) => (world.completed.has(idempotencyKey) ? { done: true, result: 'ok' } : { done: false })
        : undefined,
    }).run((ctx) => handler(world, ctx))
    const outage = new OutageSwitch()
    outageOf = outage
    worldNow = world
    waitingOutOutage = []
    outageStepsLeft = undefined
    // The server (pushes, the operator) reaches the database as the workers do: through the outage.
    const serverStore = interceptStore(outageStore(base, outage), {
      before: async (text) => {
        if (world.serverScheduler) await world.serverScheduler.schedule(Promise.resolve(), `push: ${text.replace(/\s+/g, ' ').slice(0, 60)}`)
      },
    })
    const server = createServer({ contract: chat, consumers: [c], store: serverStore })
    const { id: sessionId } = await server.sessions.create('u')
    const consumers = new Map([[name, c as never]])
    const workers: WorkerSim[] = []
    for (const index of [0, 1]) {
      const sim = { index, id: `w${index}-${name}`, dead: false } as WorkerSim
      sim.store = interceptStore(outageStore(base, outage), {
        before: async (text) => {
          if (sim.dead) await new Promise(() => {}) // a dead process sends nothing, ever
          if (sim.scheduler) await sim.scheduler.schedule(Promise.resolve(), `w${index}: ${text.replace(/\s+/g, ' ').slice(0, 60)}`)
        },
      })
      const key = 10_000 + n * 2 + index
      const lock = (await base.holdLifeLock!(key))!
      sim.liveness = {
        key,
        ownerGone: base.ownerGone!.bind(base),
        trusted: () => true,
        release: () => lock.release(),
      }
      const prepare = (input: { type: string; payload: unknown; id?: string }) => validateInput(chat, input, 'server')
      sim.host = {
        store: sim.store,
        contract: chat,
        consumers,
        append: (sid, inputs, options) => append(sim.store, server.routing, sid, inputs.map(prepare), options),
      }
      workers.push(sim)
    }
    Object.assign(world, {
      kind,
      base,
      server,
      name,
      sessionId,
      stubborn,
      truthfulReconcile,
      overlapSafe,
      workers,
      jobs: [],
      attempts: [],
      cancelRecorded: new Set<number>(),
      happened: new Set<string>(),
      completed: new Set<string>(),
      violations: [],
      step: 0,
      outage,
      calls: new CallsInFlight(),
      stops: [],
      outbox: [],
      revoked: new Map<number, number>(),
      heldRetries: new Map<string, 'held' | 'due'>(),
      attemptSeen: new Map<number, number>(),
      lastTransition: 0,
      statusSeen: new Map<number, string>(),
      waitingSeen: new Set<number>(),
    })
    return world
  }

  /** The consumer's handler: parks for the next action the commands send; reacts to its signal as configured. */
  async function handler(world: World, ctx: Parameters<Parameters<ReturnType<typeof consumer<typeof chat, 'generate'>>['run']>[0]>[0]) {
    const run = world.attempts.find((a) => a.jobId === ctx.jobId && a.attempt === ctx.attempt)!
    run.signal = ctx.signal
    run.entered = true
    if (world.cancelRecorded.has(ctx.jobId) && !ctx.signal.aborted) {
      world.violations.push(`3: attempt ${ctx.attempt} of job ${ctx.jobId} started unsignalled after its Stop was recorded`)
    }
    const aborted = new Promise<'aborted'>((resolve) => {
      if (ctx.signal.aborted) resolve('aborted')
      else ctx.signal.addEventListener('abort', () => resolve('aborted'), { once: true })
    })
    let effects = 0
    try {
      for (;;) {
        const next = world.stubborn ? run.receive() : Promise.race([run.receive(), aborted])
        run.notify()
        const action = await next
        if (action === 'aborted') {
          if (abortReason(ctx.signal)?.isCancel) return
          throw ctx.signal.reason
        }
        if (action === 'return') return
        if (action === 'throw') throw new Error('the handler failed')
        run.inEffect = true
        try {
          const call = ctx.effect(
            `e${++effects}`,
            async (idempotencyKey) => {
              const twice = world.calls.enter(idempotencyKey, { worker: run.worker, attempt: ctx.attempt, overlapSafe: world.overlapSafe })
              if (twice) world.violations.push(twice)
              try {
                if (world.cancelRecorded.has(ctx.jobId)) {
                  world.violations.push(`1: effect ${idempotencyKey} dispatched after the Stop of job ${ctx.jobId} was recorded`)
                }
                // The dispatch compare-and-set let this call through: its attempt must hold the run, ACTIVE.
                const [held] = await query<{ attempt: number; status: string }>(
                  world.base.db,
                  sql`select attempt, status from a2_jobs where id = ${ctx.jobId}`,
                )
                if (held.attempt !== ctx.attempt || held.status !== 'ACTIVE') {
                  world.violations.push(
                    `8: effect ${idempotencyKey} called by attempt ${ctx.attempt} while the run is ${held.status} at attempt ${held.attempt}`,
                  )
                }
                world.happened.add(idempotencyKey)
                run.effect = gate()
                run.notify()
                const done = run.effect.promise
                if (world.stubborn) await done
                else await Promise.race([done, aborted.then(() => Promise.reject(ctx.signal.reason))])
                world.completed.add(idempotencyKey)
                return 'ok'
              } finally {
                world.calls.leave(idempotencyKey, ctx.attempt)
              }
            },
            { overlapSafe: world.overlapSafe },
          )
          call.catch(() => {}) // awaited below, unless the handler throws out of it
          await Promise.race([call, run.abandon.promise.then(() => Promise.reject(ABANDONED))])
        } catch (error) {
          if (error === ABANDONED) {
            if (run.effect) run.orphans.push(run.effect)
            throw new Error('the handler failed while its effect was in flight', { cause: error })
          }
          if (world.stubborn) continue
          if (abortReason(ctx.signal)?.isCancel) return
          throw error
        } finally {
          run.inEffect = false
          run.effect = undefined
        }
      }
    } finally {
      run.ended = true
      run.notify()
    }
  }

  /**
   * Captures "the next time `run` moves (parks, enters an effect, ends) or its attempt is
   * over" now, before the step that causes it; the returned function waits for it.
   */
  function expectMove(run: Driven, attempt: Attempt | undefined, dead: boolean): () => Promise<void> {
    if (dead) return async () => {}
    const next = Promise.race([run.nextMove(), attempt?.done ?? new Promise<void>(() => {})])
    return async () => {
      if (await heldByOutage(next, `attempt ${run.attempt} of job ${run.jobId} to move`, run.worker)) return
      await watchdog(next, `attempt ${run.attempt} of job ${run.jobId} to move`)
      // Let the attempt's own continuation (settling after the handler ended) finish too.
      if (run.ended && attempt && !(await heldByOutage(attempt.done, `attempt ${run.attempt} of job ${run.jobId} to settle`, run.worker))) {
        await watchdog(attempt.done, `attempt ${run.attempt} of job ${run.jobId} to settle`)
      }
    }
  }

  /** A step that never completes is a harness or runtime hang: fail it by name instead of timing the whole file out. */
  async function watchdog<T>(promise: Promise<T>, what: string): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined
    try {
      return await Promise.race([
        promise,
        new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`stuck waiting for ${what}`)), 10_000))),
      ])
    } finally {
      clearTimeout(timer)
    }
  }

  const attemptObjects = new Map<Driven, Attempt>()

  // ---- the store unreachable for a while ----------------------------------------------------
  // An attempt whose write meets the outage keeps its lease and sends the write again until the
  // database answers (outage.ts): a step that needs the database does not end while it is away.
  // Such a step is left waiting, and awaited when the database comes back (every pending one,
  // by name, under the watchdog): it must land then.
  let outageOf: OutageSwitch | undefined
  let waitingOutOutage: Array<{ promise: Promise<unknown>; what: string; dead: () => boolean }> = []
  /** The sequence's world (one at a time): whether a held step's worker was killed meanwhile. */
  let worldNow: World | undefined
  /** How long a step that needs no statement takes at most (none does; a move is microseconds). */
  const STEP_WITHOUT_DATABASE_MS = 300
  async function heldByOutage(promise: Promise<unknown>, what: string, worker?: number): Promise<boolean> {
    // Down now, or armed to go down at one of the step's own statements: look in slices.
    for (let slice = 0; slice < 30 && (outageOf?.down || outageOf?.armed); slice++) {
      let timer: ReturnType<typeof setTimeout> | undefined
      const done = await Promise.race([
        promise.then(() => true),
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), STEP_WITHOUT_DATABASE_MS))),
      ]).finally(() => clearTimeout(timer))
      if (done) return false
      if (outageOf.down) {
        count('step held by the outage')
        const dead = () => worker !== undefined && worldNow?.workers[worker].dead === true
        waitingOutOutage.push({ promise, what: `${what} once the database is back`, dead })
        return true
      }
    }
    return false
  }
  /** The database is back: every step it held lands now. */
  async function landHeldSteps(): Promise<void> {
    const held = waitingOutOutage
    waitingOutOutage = []
    // A worker killed meanwhile sends nothing ever again: its held steps never land (nor must they).
    for (const { promise, what, dead } of held) if (!dead()) await watchdog(promise, what)
  }
  /** Commands left before an outage of a fixed length ends by itself (undefined: none running). */
  let outageStepsLeft: number | undefined
  /** The database goes away now and comes back by itself after `steps` more commands. */
  const unreachableFor = (steps: number) =>
    cmd(
      `store unreachable for a while(${steps} steps)`,
      (w) => !w.outage.down && !w.outage.armed,
      async (w) => {
        w.outage.arm(0, 'refused')
        outageStepsLeft = steps + 1 // this command's own tick counts one
      },
    )
  async function outageTick(w: World): Promise<void> {
    if (outageStepsLeft === undefined || --outageStepsLeft > 0) return
    outageStepsLeft = undefined
    w.outage.restore()
    await landHeldSteps()
  }

  // ---- commands ----------------------------------------------------------------------------
  type Cmd = fc.AsyncCommand<World, World>
  const stats = new Map<string, number>()
  const count = (label: string) => stats.set(label, (stats.get(label) ?? 0) + 1)
  const cmd = (label: string, check: (w: World) => boolean, run: (w: World) => Promise<void>): Cmd => ({
    check,
    run: async (_m, w) => {
      w.step++
      stats.set(label.replace(/\(.*\)/, ''), (stats.get(label.replace(/\(.*\)/, '')) ?? 0) + 1)
      await run(w)
      await outageTick(w)
      await holdRetries(w)
      await checkInvariants(w, label)
    },
    toString: () => label,
  })
  /** The running handler on `worker`, or else on the other one: commands name a preference, not a must. */
  const liveRunOf = (w: World, worker: number) => {
    const on = (i: number) => w.attempts.find((a) => a.worker === i && a.entered && !a.ended && !w.workers[i].dead)
    return on(worker) ?? on(1 - worker)
  }

  let pushes = 0
  const headOf = async (w: World) =>
    Number((await query<{ head: number }>(w.base.db, sql`select head from a2_sessions where id = ${w.sessionId}`))[0].head)
  const eventLanded = async (w: World, id: string) =>
    (await query(w.base.db, sql`select 1 from a2_events where session_id = ${w.sessionId} and id = ${id}`)).length === 1

  /** A generation pushed by the browser (its own id); during an outage the push may error, having written all of it or nothing. */
  const appendJob = cmd(
    'push generate',
    (w) => w.jobs.length < 2,
    async (w) => {
      const id = `g${++pushes}`
      const head = await headOf(w)
      let failed = false
      try {
        await w.server.push(w.sessionId, 'u', { id, type: 'generate', payload: {} }, { admit: async () => {} })
      } catch (error) {
        if (!w.outage.down) throw error
        failed = true
      }
      const landed = await eventLanded(w, id)
      const jobs = await query<{ id: number }>(w.base.db, sql`select id from a2_jobs where event_id = ${id} and consumer = ${w.name}`)
      const after = await headOf(w)
      if (failed) count(landed ? 'push errored, landed' : 'push errored, not landed')
      if (!failed && !landed) w.violations.push(`9: generation ${id} was acknowledged and is not in the log`)
      if (landed !== (jobs.length === 1) || after !== head + (landed ? 1 : 0)) {
        w.violations.push(
          `10: push of ${id} ${failed ? 'errored' : 'answered'}: event ${landed ? 'in' : 'not in'} the log, ${jobs.length} job(s), head ${head} → ${after}`,
        )
      }
      if (landed && jobs.length === 1) w.jobs.push({ eventId: id, jobId: Number(jobs[0].id) })
    },
  )

  /**
   * One claim on `worker`, and the attempt it starts, up to the handler's first move. A claim
   * the outage refused (or whose answer it lost: the job stays held until its lease lapses)
   * starts nothing.
   */
  async function claimOn(w: World, worker: number): Promise<{ job: ClaimedJob; run: Driven } | undefined> {
    const sim = w.workers[worker]
    const startedAt = performance.now()
    let job: ClaimedJob | undefined
    try {
      ;[job] = await claimJobs(sim.store.db, {
        consumers: [w.name],
        owner: sim.id,
        ownerKey: sim.liveness.key,
        leaseMs: { [w.name]: LEASE_MS },
        limit: 1,
      })
    } catch (error) {
      if (!w.outage.down) throw error
      count('claim refused by the outage')
      return undefined
    }
    if (!job) return undefined
    const revokedAt = w.revoked.get(job.id)
    if (revokedAt !== undefined)
      w.violations.push(`11: job ${job.id}, its retry revoked at attempt ${revokedAt}, claimed again as attempt ${job.attempt}`)
    const earlierOpen = await query<{ id: number; status: string }>(
      w.base.db,
      sql`select id, status from a2_jobs
            where consumer = ${w.name} and session_id = ${job.sessionId} and lane = 'gen'
              and event_index < ${job.eventIndex} and status in ('ACTIVE', 'CANCELLING', 'UNKNOWN')`,
    )
    // Settled never reopens: a job open now was open at the claim.
    for (const e of earlierOpen) w.violations.push(`7: job ${job.id} claimed while job ${Number(e.id)}, earlier in its lane, is ${e.status}`)
    const later = w.attempts.find((a) => a.jobId > job.id)
    if (later) w.violations.push(`7: job ${job.id} claimed after job ${later.jobId}, later in its lane, had started`)
    const run = new Driven(worker, job.id, job.attempt, 'gen')
    w.attempts.push(run)
    const attempt = new Attempt(sim.host, job, sim.host.consumers.get(w.name)!, sim.id, startedAt)
    attemptObjects.set(run, attempt)
    void attempt.done.then(() => (run.over = true))
    await expectMove(run, attempt, false)()
    return { job, run }
  }

  const claim = (worker: number) =>
    cmd(
      `claim(w${worker})`,
      (w) => !w.workers[worker].dead,
      async (w) => void (await claimOn(w, worker)),
    )

  const act = (worker: number, action: Action) =>
    cmd(
      `${action}(w${worker})`,
      (w) => !!liveRunOf(w, worker) && !liveRunOf(w, worker)!.inEffect,
      async (w) => {
        if (liveRunOf(w, worker)!.inEffect) return
        const run = liveRunOf(w, worker)!
        const moved = expectMove(run, attemptObjects.get(run), false)
        run.send(action)
        await moved()
      },
    )

  /** Every handler still running returns at once (a stale attempt and its successor, on one worker or two): their endings are in flight together. */
  const runningNow = (w: World) => w.attempts.filter((a) => a.entered && !a.ended && !a.inEffect && !w.workers[a.worker].dead)
  const returnAll = cmd(
    'return all at once',
    (w) => runningNow(w).length >= 2,
    async (w) => {
      const runs = runningNow(w)
      const moved = runs.map((run) => expectMove(run, attemptObjects.get(run), false))
      for (const run of runs) run.send('return')
      await Promise.all(moved.map((m) => m()))
    },
  )

  const completeEffect = (worker: number) =>
    cmd(
      `effect completes(w${worker})`,
      (w) => !!liveRunOf(w, worker)?.effect,
      async (w) => {
        const run = liveRunOf(w, worker)!
        const moved = expectMove(run, attemptObjects.get(run), false)
        run.effect!.open()
        await moved()
      },
    )

  const renew = (worker: number) =>
    cmd(
      `renew(w${worker})`,
      (w) => w.attempts.some((a) => a.worker === worker && !a.over) && !w.workers[worker].dead,
      async (w) => {
        for (const run of w.attempts.filter((a) => a.worker === worker && !a.over)) {
          const attempt = attemptObjects.get(run)!
          const moved = expectMove(run, attempt, false)
          await attempt.renew()
          if (run.signal?.aborted && run.entered && !run.ended && !w.stubborn) await moved()
        }
      },
    )

  /**
   * Time passes past this worker's leases: its local clock fires first (it counts from before
   * the claim), then the database's — also for runs it holds without an attempt going (an
   * outage failed the attempt's ending, or lost the answer to its claim).
   */
  const lapse = (worker: number) =>
    cmd(
      `lease lapses(w${worker})`,
      (w) => w.attempts.some((a) => a.worker === worker) || w.outage.faults.lost > 0,
      async (w) => {
        w.calls.proveStopped(worker) // the owner's clock aborted them: the lease is the proof (§9)
        const runs = w.attempts.filter((a) => a.worker === worker && !a.over)
        for (const run of runs) {
          const moved = expectMove(run, attemptObjects.get(run), w.workers[worker].dead)
          attemptObjects.get(run)!.abort(new RunAborted('CLAIM_EXPIRED'))
          await query(
            w.base.db,
            sql`update a2_jobs set lease_until = now() - interval '1 millisecond'
              where id = ${run.jobId} and attempt = ${run.attempt} and owner = ${w.workers[worker].id}`,
          )
          if (run.entered && !w.stubborn) await moved()
        }
        await query(
          w.base.db,
          sql`update a2_jobs set lease_until = now() - interval '1 millisecond'
            where consumer = ${w.name} and owner = ${w.workers[worker].id} and lease_until >= now()`,
        )
      },
    )

  const kill = (worker: number) =>
    cmd(
      `kill -9(w${worker})`,
      (w) => !w.workers[worker].dead,
      async (w) => {
        const sim = w.workers[worker]
        sim.dead = true
        w.calls.proveStopped(worker) // the process died with its calls
        await sim.liveness.release()
      },
    )

  /** The crash the contract is about: a process dies while its effect is out with the provider. */
  const killMidEffect = cmd(
    'kill -9 mid-effect',
    (w) => w.attempts.some((a) => a.inEffect && a.effect && !w.workers[a.worker].dead),
    async (w) => {
      const run = w.attempts.find((a) => a.inEffect && a.effect && !w.workers[a.worker].dead)!
      const sim = w.workers[run.worker]
      sim.dead = true
      w.calls.proveStopped(run.worker) // the process died with its calls
      await sim.liveness.release()
    },
  )

  interface RunBefore {
    status: string
    attempt: number
    cancelVersion: number
    cancelledBy: string | null
    /** ACTIVE, held by nobody, its last attempt's failure scheduled a retry: what a Stop revokes. */
    waitingForRetry: boolean
  }

  /** The Stop's run as it stands just before a push of it: what the model predicts from. */
  async function runBefore(w: World, jobId: number): Promise<RunBefore> {
    const [row] = await query<{
      status: string
      owner: string | null
      attempt: number
      cancel_version: number
      by: string | null
      last: string | null
    }>(
      w.base.db,
      sql`select status, owner, attempt, cancel_version, cancelled_by ->> 'id' as by,
                 (select reason from a2_job_transitions t where t.job_id = j.id order by t.id desc limit 1) as last
          from a2_jobs j where id = ${jobId}`,
    )
    return {
      status: row.status,
      attempt: Number(row.attempt),
      cancelVersion: Number(row.cancel_version),
      cancelledBy: row.by,
      waitingForRetry: row.status === 'ACTIVE' && row.owner === null && row.last === 'RETRY_SCHEDULED',
    }
  }

  /**
   * Pushes a Stop as the browser does (its client id; the app's admission, here one that
   * admits). Acknowledged, it leaves the outbox; errored (the outage), it stays there to be
   * pushed again, and what the errored push wrote must be all of it or nothing (invariant 10).
   */
  async function pushStop(w: World, stop: Stop, before: RunBefore): Promise<{ landedNow: boolean; event?: { id: string; index: number } }> {
    const head = await headOf(w)
    const landedBefore = await eventLanded(w, stop.id)
    let event: { id: string; index: number } | undefined
    try {
      const answer = await w.server.push(
        w.sessionId,
        'u',
        { id: stop.id, type: 'cancelled', payload: { of: stop.of, lastSeenIndex: 0 } },
        { admit: async () => {}, caps: w.caps },
      )
      event = answer.events[0]
      stop.acked = true
      w.outbox = w.outbox.filter((s) => s !== stop)
    } catch (error) {
      if (isA2Error(error, 'session_full') && !w.outage.down) {
        // 9: final (413): the browser drops it. Only a Stop whose run another Stop already moved may meet it.
        const open = before.status === 'ACTIVE' || (before.status === 'UNKNOWN' && before.cancelledBy === null)
        count(open ? 'Stop refused by the cap while its run was open' : 'Stop refused by the cap, its run already stopped')
        if (open) w.violations.push(`9: Stop ${stop.id} of job ${stop.jobId} was finally refused (session_full) while its run was ${before.status}`)
        w.outbox = w.outbox.filter((s) => s !== stop)
        return { landedNow: false }
      }
      if (!w.outage.down) throw error
      if (!w.outbox.includes(stop)) w.outbox.push(stop)
    }
    const landed = await eventLanded(w, stop.id)
    if (landed && !landedBefore && w.caps) count('Stop landed past the cap')
    const landedNow = landed && !landedBefore
    const after = await runBefore(w, stop.jobId)
    if (!event) count(landedNow ? 'Stop errored, landed' : 'Stop errored, not landed')
    const expectedHead = head + (landedNow ? 1 : 0)
    const open = !TERMINAL.has(before.status)
    const unchanged = after.cancelVersion === before.cancelVersion && after.cancelledBy === before.cancelledBy
    const whole = landedNow ? !open || after.cancelledBy !== null : unchanged
    if ((await headOf(w)) !== expectedHead || !whole) {
      w.violations.push(
        `10: Stop ${stop.id} ${event ? 'answered' : 'errored'}: event ${landed ? 'in' : 'not in'} the log (before: ${landedBefore}), ` +
          `head ${head} → ${await headOf(w)}, run ${JSON.stringify(before)} → ${JSON.stringify(after)}`,
      )
    }
    return { landedNow, event }
  }

  /** The model's side of a Stop that landed: recorded if its run was not over, a retry revoked if it waited for one. */
  function recordLanding(w: World, stop: Stop, before: RunBefore, startedMeanwhile: boolean) {
    stop.landedOn = before.status
    count(`Stop landed on ${before.status}${before.waitingForRetry && !startedMeanwhile ? ' waiting for a retry' : ''}`)
    if (!TERMINAL.has(before.status)) w.cancelRecorded.add(stop.jobId)
    if (before.waitingForRetry && !startedMeanwhile) w.revoked.set(stop.jobId, before.attempt)
  }

  /** The Stop's NOTIFY reached the workers: every attempt of its run still going hears it. */
  async function deliverHint(w: World, stop: Stop, event: { id: string; index: number }) {
    for (const run of w.attempts.filter((a) => a.jobId === stop.jobId && !a.over && !w.workers[a.worker].dead)) {
      const moved = expectMove(run, attemptObjects.get(run), false)
      attemptObjects.get(run)!.cancelled({ id: event.id, index: event.index })
      if (run.entered && !w.stubborn) await moved()
    }
  }

  async function sendStop(w: World, stop: Stop, hintDelivered: boolean) {
    const before = await runBefore(w, stop.jobId)
    const { landedNow, event } = await pushStop(w, stop, before)
    if (landedNow) recordLanding(w, stop, before, false)
    if (hintDelivered && event) await deliverHint(w, stop, event)
  }

  const cancel = (jobIndex: number, hintDelivered: boolean) =>
    cmd(
      `Stop(job${jobIndex}, hint ${hintDelivered ? 'delivered' : 'lost'})`,
      (w) => w.jobs.length > jobIndex,
      async (w) => {
        const job = w.jobs[jobIndex]
        const stop: Stop = { id: `c${++pushes}`, jobId: job.jobId, of: job.eventId, acked: false }
        w.stops.push(stop)
        await sendStop(w, stop, hintDelivered)
      },
    )

  /** The user stops a run the controller could not settle (UNKNOWN): the Stop is recorded and honoured when it is resolved (DESIGN §12). */
  const stopUnknown = (hintDelivered: boolean) =>
    cmd(
      `Stop an UNKNOWN run(hint ${hintDelivered ? 'delivered' : 'lost'})`,
      (w) => [...w.statusSeen.values()].includes('UNKNOWN'),
      async (w) => {
        const job = w.jobs.find((j) => w.statusSeen.get(j.jobId) === 'UNKNOWN')!
        const stop: Stop = { id: `c${++pushes}`, jobId: job.jobId, of: job.eventId, acked: false }
        w.stops.push(stop)
        await sendStop(w, stop, hintDelivered)
      },
    )

  /** The cap is near: the session's caps are set at what it holds now, so every later Stop is pushed past them. */
  const capNear = cmd(
    'the cap is near',
    (w) => !w.caps,
    async (w) => {
      const [row] = await query<{ head: number; bytes: string }>(
        w.base.db,
        sql`select head, pushed_bytes::text as bytes from a2_sessions where id = ${w.sessionId}`,
      )
      w.caps = { maxEvents: row.head, maxPushedBytes: Number(row.bytes) }
    },
  )

  /** The user stops a run while it waits for its retry (its backoff held): the retry is revoked (invariant 11). */
  const stopWaitingRetry = cmd(
    'Stop a run waiting for its retry',
    (w) => w.waitingSeen.size > 0,
    async (w) => {
      const job = w.jobs.find((j) => w.waitingSeen.has(j.jobId))!
      const stop: Stop = { id: `c${++pushes}`, jobId: job.jobId, of: job.eventId, acked: false }
      w.stops.push(stop)
      await sendStop(w, stop, false)
    },
  )

  /** The browser's outbox pushes every unacknowledged Stop again, same id (DESIGN §10). */
  const resendStops = (hintDelivered: boolean) =>
    cmd(
      `outbox pushes Stops again(hint ${hintDelivered ? 'delivered' : 'lost'})`,
      (w) => w.outbox.length > 0,
      async (w) => {
        for (const stop of [...w.outbox]) await sendStop(w, stop, hintDelivered)
      },
    )

  /**
   * A claim and a Stop of the run it may take, their statements interleaved by the scheduler
   * (the push's read, its one-statement append or the transaction it falls back to, the claim).
   * Invariant 12: the claim takes the run only before the Stop lands (at the cancel version
   * from before it), or not at all; a claim that read a Stop never starts its handler.
   */
  const claimRacesStop = (worker: number, jobIndex: number, hintDelivered: boolean) =>
    cmd(
      `claim races Stop(w${worker}, job${jobIndex}, hint ${hintDelivered ? 'delivered' : 'lost'})`,
      (w) => w.jobs.length > jobIndex && !w.workers[worker].dead,
      async (w) => {
        const job = w.jobs[jobIndex]
        const stop: Stop = { id: `c${++pushes}`, jobId: job.jobId, of: job.eventId, acked: false }
        w.stops.push(stop)
        const before = await runBefore(w, stop.jobId)
        const scheduler = currentScheduler!
        const sim = w.workers[worker]
        sim.scheduler = scheduler
        w.serverScheduler = scheduler
        let claimed: Awaited<ReturnType<typeof claimOn>>
        let pushed: Awaited<ReturnType<typeof pushStop>>
        try {
          ;[claimed, pushed] = await scheduler.waitFor(Promise.all([claimOn(w, worker), pushStop(w, stop, before)]))
        } finally {
          sim.scheduler = undefined
          w.serverScheduler = undefined
          await scheduler.waitIdle() // nothing the race set off stays parked
        }
        const taken = claimed?.job.id === stop.jobId ? claimed : undefined
        if (taken && pushed.landedNow && taken.job.cancelVersion !== before.cancelVersion) {
          w.violations.push(`12: job ${stop.jobId} claimed at cancel version ${taken.job.cancelVersion} after Stop ${stop.id} landed`)
        }
        if (taken?.job.cancelledBy && taken.run.entered)
          w.violations.push(`12: attempt ${taken.job.attempt} of job ${stop.jobId} read Stop ${taken.job.cancelledBy.id} and started`)
        if (pushed.landedNow) recordLanding(w, stop, before, taken !== undefined)
        if (hintDelivered && pushed.event) await deliverHint(w, stop, pushed.event)
      },
    )

  /** A retry's backoff runs out (the harness holds every backoff until this command: claims stay replayable). */
  const retryDue = cmd(
    'retry comes due',
    (w) => [...w.heldRetries.values()].includes('held'),
    async (w) => {
      for (const [key, state] of w.heldRetries) {
        if (state !== 'held') continue
        const [jobId, attempt] = key.split(':').map(Number)
        await query(w.base.db, sql`update a2_jobs set run_at = now() - interval '1 millisecond' where id = ${jobId} and attempt = ${attempt}`)
        w.heldRetries.set(key, 'due')
      }
    },
  )

  /** Holds every newly scheduled retry's backoff (run at a day from now) until `retry comes due`. */
  async function holdRetries(w: World) {
    const waiting = await query<{ id: number; attempt: number }>(
      w.base.db,
      sql`select id, attempt from a2_jobs j where consumer = ${w.name} and status = 'ACTIVE' and owner is null
            and (select reason from a2_job_transitions t where t.job_id = j.id order by t.id desc limit 1) = 'RETRY_SCHEDULED'`,
    )
    for (const job of waiting) {
      const key = `${Number(job.id)}:${Number(job.attempt)}`
      if (w.heldRetries.has(key)) continue
      await query(w.base.db, sql`update a2_jobs set run_at = now() + interval '1 day' where id = ${job.id} and attempt = ${job.attempt}`)
      w.heldRetries.set(key, 'held')
    }
  }

  /** The database goes away for every process after `after` more statements, the one it goes away under refused or its answer lost. */
  const outageAt = (after: number, fault: Fault) =>
    cmd(
      `database goes away(after ${after} statements, ${fault})`,
      (w) => !w.outage.down && !w.outage.armed,
      async (w) => w.outage.arm(after, fault),
    )
  const databaseBack = cmd(
    'database comes back',
    (w) => w.outage.down || w.outage.armed,
    async (w) => {
      w.outage.restore()
      outageStepsLeft = undefined
      await landHeldSteps()
    },
  )

  const drains = cmd(
    'two drains at once',
    (w) => w.workers.some((s) => !s.dead),
    async (w) => {
      const alive = w.workers.filter((s) => !s.dead)
      const scheduler = currentScheduler!
      for (const sim of alive) sim.scheduler = scheduler
      try {
        const forceOut = (sim: WorkerSim) => (jobId: number) => {
          for (const run of w.attempts.filter((a) => a.worker === sim.index && a.jobId === jobId))
            attemptObjects.get(run)!.abort(new RunAborted('FENCED_OUT'))
        }
        // Settled, not all: a drain the outage fails must not leave the other's statements parked in the scheduler.
        const all = Promise.allSettled(
          alive.map((sim) => drainOnce(sim.host, { owner: `drain-${sim.id}`, liveness: sim.liveness, graceMs: 0, forceOut: forceOut(sim) })),
        )
        for (const outcome of await scheduler.waitFor(all)) {
          if (outcome.status === 'rejected' && !w.outage.down) throw outcome.reason
        }
      } finally {
        for (const sim of alive) sim.scheduler = undefined
        // Statements the drains set off that are still parked (a forced-out handler's late effect
        // outcome): released in the scheduler's order, or they would wait for good.
        await scheduler.waitIdle()
      }
      // Forced-out handlers unwind (or, stubborn, keep waiting: they are fenced either way).
      for (const run of w.attempts.filter((a) => a.entered && !a.ended && a.signal?.aborted && !w.workers[a.worker].dead && !w.stubborn)) {
        await expectMove(run, attemptObjects.get(run), false)()
      }
    },
  )

  const operatorResolves = cmd(
    'operator resolves',
    () => true,
    async (w) => {
      const [open] = await query<{ job_id: number; key: string }>(
        w.base.db,
        sql`select e.job_id, e.key from a2_effects e join a2_jobs j on j.id = e.job_id
          where j.consumer = ${w.name} and j.status = 'UNKNOWN' and e.status = 'UNKNOWN' order by e.job_id, e.key limit 1`,
      )
      if (!open) return
      const truth = w.happened.has(`a2-${Number(open.job_id)}-${open.key}`)
      try {
        await w.server.operator.resolveEffect(Number(open.job_id), open.key, { done: truth, result: truth ? 'ok' : undefined }, 'operator')
      } catch (error) {
        if (!w.outage.down) throw error
      }
    },
  )

  // Weighted by repetition: the actions inside a run (claim, dispatch, complete, cancel) come
  // often; a kill, which ends a worker's part in the sequence, seldom.
  const claims = fc.constantFrom(claim(0), claim(1))
  const dispatches = fc.constantFrom(act(0, 'dispatch'), act(1, 'dispatch'))
  const completions = fc.constantFrom(completeEffect(0), completeEffect(1))
  const cancels = fc.constantFrom(cancel(0, true), cancel(0, false), cancel(1, true), cancel(1, false))
  const fx = effectCommands()
  const commands = [
    fc.constant(appendJob),
    claims,
    claims,
    claims,
    dispatches,
    dispatches,
    dispatches,
    completions,
    completions,
    fc.constantFrom(act(0, 'return'), act(1, 'return'), act(0, 'throw'), act(1, 'throw')),
    // Its precondition (two handlers running: a stale attempt and its successor) is rare.
    fc.constant(returnAll),
    fc.constant(returnAll),
    fc.constantFrom(renew(0), renew(1)),
    fc.constantFrom(lapse(0), lapse(1)),
    fc.constantFrom(kill(0), kill(1), lapse(0), lapse(1)),
    fc.constant(killMidEffect),
    fc.constant(killMidEffect),
    cancels,
    cancels,
    fc.constant(drains),
    // Two drains: a run whose owner died is released, then taken over — the road to UNKNOWN.
    fc.constant(drains),
    fc.constant(operatorResolves),
    fc.constantFrom(claimRacesStop(0, 0, true), claimRacesStop(1, 0, false), claimRacesStop(0, 1, false), claimRacesStop(1, 1, true)),
    // Failures are retried only with a claim after them: the backoff's end comes as often as a claim.
    fc.constant(retryDue),
    fc.constant(retryDue),
    // The outage: down at one of the next few statements (inside a push, an effect, an ending), back later.
    fc.constantFrom(...[0, 1, 2, 3, 5].flatMap((after) => [outageAt(after, 'refused'), outageAt(after, 'lost')])),
    // Outages are short (comes back twice as often as it goes), so a sequence has room for several.
    fc.constant(databaseBack),
    fc.constant(databaseBack),
    // An outage that lasts a few steps and ends by itself (a Postgres restart): attempts wait it out.
    fc.constantFrom(unreachableFor(1), unreachableFor(3)),
    fc.constantFrom(resendStops(true), resendStops(false)),
    // An UNKNOWN run is many steps deep (a death mid-effect, a takeover, no reconcile): Stop it when one is there.
    fc.constantFrom(stopUnknown(true), stopUnknown(false)),
    // A failure that schedules a retry, and a Stop while it waits: what invariant 11 is about.
    fc.constantFrom(act(0, 'throw'), act(1, 'throw')),
    fc.constant(stopWaitingRetry),
    fc.constant(capNear),
    fc.constant(killMidEffect),
    ...fx.weighted,
  ]

  /**
   * The commands about calls in flight (invariant 13): a handler throws while its effect's call
   * runs (`Promise.all` of a slow call and one that fails), that call's provider answers later,
   * and a drain dies after its take (forcing a run out, maybe, then gone before its verdict).
   */
  function effectCommands() {
    const throwMidEffect = (worker: number) =>
      cmd(
        `throw mid-effect(w${worker})`,
        (w) => !!liveRunOf(w, worker)?.effect,
        async (w) => {
          const run = liveRunOf(w, worker)!
          const attempt = attemptObjects.get(run)!
          const ended = run.nextMove()
          run.abandon.open()
          await watchdog(ended, `attempt ${run.attempt} of job ${run.jobId} to throw`)
          count('handler threw mid-effect')
          // The attempt waits for its call (never outruns it), or, that bug back, ends the run now.
          await watchdog(
            until(() => run.over || attempt.dispatches.holdingBack),
            `attempt ${run.attempt} of job ${run.jobId} to settle or wait`,
          )
        },
      )
    const leftCallCompletes = cmd(
      'left call completes',
      (w) => w.attempts.some((a) => a.orphans.length > 0 && !w.workers[a.worker].dead),
      async (w) => {
        const run = w.attempts.find((a) => a.orphans.length > 0 && !w.workers[a.worker].dead)!
        for (const left of run.orphans.splice(0)) left.open()
        const done = attemptObjects.get(run)!.done
        const what = `attempt ${run.attempt} of job ${run.jobId} to settle after its call`
        // Its ending may wait out the outage (then it lands when the database is back).
        if (!(await heldByOutage(done, what, run.worker))) await watchdog(done, what)
        count('left call completed')
      },
    )
    const drainDiesAfterTake = (worker: number) =>
      cmd(
        `drain dies after its take(w${worker})`,
        // Only while a run is stopping: the take then forces it out or settles it, the state a dead drain must leave durable.
        (w) => !w.workers[worker].dead && [...w.statusSeen.values()].includes('CANCELLING'),
        async (w) => {
          const sim = w.workers[worker]
          const died = gate()
          const dying = interceptStore(sim.store, {
            after: async (text) => {
              if (!text.includes('cancelling_since = null') || sim.dead) return
              // The take committed; the process dies before the drain's next statement (a dead process sends nothing).
              sim.dead = true
              w.calls.proveStopped(worker)
              await sim.liveness.release()
              died.open()
            },
          })
          const forceOut = (jobId: number) => {
            for (const run of w.attempts.filter((a) => a.worker === worker && a.jobId === jobId))
              attemptObjects.get(run)!.abort(new RunAborted('FENCED_OUT'))
          }
          const drained = drainOnce({ ...sim.host, store: dying }, { owner: `drain-${sim.id}`, liveness: sim.liveness, graceMs: 0, forceOut }).catch(
            (error) => {
              if (!w.outage.down) throw error
            },
          )
          await watchdog(Promise.race([drained, died.promise]), `the drain on w${worker} to take or finish`)
          if (!died.opened) return
          count('drain died after its take')
          const held = await query(w.base.db, sql`select 1 from a2_jobs where consumer = ${w.name} and owner = ${`drain-${sim.id}`}`)
          if (held.length > 0) count('drain died holding a run')
        },
      )
    // A throw mid-effect needs a call parked (a dispatch first): twice the weight of a plain
    // throw. A drain's death ends its worker's part in the sequence, like a kill. What the fixed
    // seed's 300 sequences reach on PGlite (FC_STATS=1): a handler threw mid-effect 18 times, its
    // left call completed 7, a drain died after its take 32 (30 on Postgres; each holding a run), a forced-out
    // call was in flight under a CANCELLING run 3 times and under an UNKNOWN one once; never
    // under a terminal run (the three fixed sequences above drive each road to that state).
    const weighted = [
      fc.constantFrom(throwMidEffect(0), throwMidEffect(1)),
      fc.constantFrom(throwMidEffect(0), throwMidEffect(1)),
      fc.constant(leftCallCompletes),
      fc.constantFrom(drainDiesAfterTake(0), drainDiesAfterTake(1)),
    ]
    return { throwMidEffect, leftCallCompletes, drainDiesAfterTake, weighted }
  }

  /** Resolves once `probe` holds, checked every turn of the event loop (the watchdog bounds it). */
  async function until(probe: () => boolean): Promise<void> {
    while (!probe()) await new Promise((resolve) => setImmediate(resolve))
  }

  let currentScheduler: fc.Scheduler | undefined

  // ---- invariants --------------------------------------------------------------------------
  async function checkInvariants(w: World, after: string): Promise<void> {
    const db = w.base.db
    // Each job with its history in one statement, so one snapshot: an ending that commits
    // between two reads (an attempt settling as the step returns) would otherwise show a job
    // whose status and history disagree though no commit ever held them apart.
    const jobs = await query<{
      id: number
      status: string
      lane: string | null
      event_index: number
      lane_blocked: boolean
      attempt: number
      max_attempts: number
      owner: string | null
      cancelled_by: string | null
      history: Array<{ id: number; from_status: string | null; to_status: string; attempt: number; reason: string }>
    }>(
      db,
      sql`select id, status, lane, event_index, lane_blocked, attempt, max_attempts, owner, cancelled_by ->> 'id' as cancelled_by,
                 coalesce((select jsonb_agg(jsonb_build_object('id', t.id, 'from_status', t.from_status, 'to_status', t.to_status,
                                                               'attempt', t.attempt, 'reason', t.reason) order by t.id)
                           from a2_job_transitions t where t.job_id = a2_jobs.id), '[]'::jsonb) as history
          from a2_jobs where consumer = ${w.name} order by id`,
    )
    for (const job of jobs) {
      const id = Number(job.id)
      if (OPEN.has(job.status)) {
        const behind = jobs.some((e) => e.lane === job.lane && e.event_index < job.event_index && OPEN.has(e.status))
        if (job.lane_blocked !== behind)
          w.violations.push(`7: open job ${id} has lane_blocked ${job.lane_blocked}, an earlier job of its lane ${behind ? 'is' : 'is not'} open`)
      }
      if (TERMINAL.has(job.status)) {
        const open = await query<{ key: string; status: string }>(
          db,
          sql`select key, status from a2_effects where job_id = ${id} and status in ('DISPATCHED', 'UNKNOWN')`,
        )
        if (open.length > 0) w.violations.push(`2: job ${id} is ${job.status} with effects ${JSON.stringify(open)}`)
      }
      const history = job.history
      const seen = w.attemptSeen.get(id) ?? 0
      for (const t of history) {
        if (Number(t.id) > w.lastTransition && t.attempt < seen) {
          w.violations.push(`8: job ${id} got a ${t.reason} row from attempt ${t.attempt} after attempt ${seen} held it`)
        }
      }
      // 11: RETRY_REVOKED exactly when a Stop landed while the run waited for its retry.
      const revokedAt = w.revoked.get(id)
      const leftCancelling = history.find((t) => t.from_status === 'CANCELLING' && t.to_status !== 'CANCELLING')
      if (revokedAt !== undefined && leftCancelling) {
        const expected =
          leftCancelling.attempt === revokedAt &&
          ((leftCancelling.reason === 'RETRY_REVOKED' && leftCancelling.to_status === 'CANCELLED') ||
            (leftCancelling.reason === 'EFFECT_UNKNOWN' && leftCancelling.to_status === 'UNKNOWN'))
        if (!expected) {
          w.violations.push(
            `11: job ${id}'s retry (after attempt ${revokedAt}) was revoked, but it left CANCELLING by ${leftCancelling.reason} to ${leftCancelling.to_status} at attempt ${leftCancelling.attempt}`,
          )
        }
      }
      if (revokedAt !== undefined && Number(job.attempt) !== revokedAt) {
        w.violations.push(`11: job ${id}'s retry was revoked after attempt ${revokedAt}, and it is at attempt ${job.attempt}`)
      }
      for (const t of history) {
        if (t.reason === 'RETRY_REVOKED' && revokedAt === undefined) {
          w.violations.push(`11: job ${id} says RETRY_REVOKED at attempt ${t.attempt}, and no Stop landed while it waited for a retry`)
        }
      }
      let status = 'ACTIVE'
      let attempt = 0
      for (const t of history) {
        if (t.attempt < attempt) w.violations.push(`8: job ${id} history goes back from attempt ${attempt} to ${t.attempt} (${t.reason})`)
        attempt = Math.max(attempt, t.attempt)
        if (t.from_status !== status) w.violations.push(`6: job ${id} history goes ${t.from_status}>${t.to_status} from ${status}`)
        if (TERMINAL.has(status) && t.to_status !== status) w.violations.push(`6: job ${id} left terminal ${status} for ${t.to_status}`)
        status = t.to_status
      }
      if (status !== job.status) w.violations.push(`6: job ${id} is ${job.status} but its history ends at ${status}`)
    }
    // Live: running unsignalled on a live worker while the job is still at its attempt (a
    // superseded attempt that has not renewed yet believes it holds the job, but every write it
    // could make is fenced: it finds out at its next renewal).
    const current = new Map(
      (await query<{ id: number; attempt: number; status: string }>(db, sql`select id, attempt, status from a2_jobs where consumer = ${w.name}`)).map(
        (j) => [Number(j.id), j] as const,
      ),
    )
    const live = w.attempts.filter(
      (a) => a.running && !w.workers[a.worker].dead && current.get(a.jobId)?.attempt === a.attempt && !TERMINAL.has(current.get(a.jobId)!.status),
    )
    const perJob = new Map<number, number>()
    for (const a of live) perJob.set(a.jobId, (perJob.get(a.jobId) ?? 0) + 1)
    for (const [jobId, count] of perJob) if (count > 1) w.violations.push(`4: ${count} live attempts of job ${jobId}`)
    const lanes = new Set(live.map((a) => a.jobId))
    if (lanes.size > 1) w.violations.push(`4: jobs ${[...lanes].join(', ')} of one lane run at once`)
    const [log] = await query<{ n: number; lo: number | null; hi: number | null; head: number }>(
      db,
      sql`select count(*)::int as n, min(index) as lo, max(index) as hi,
                 (select head from a2_sessions where id = ${w.sessionId}) as head
          from a2_events where session_id = ${w.sessionId}`,
    )
    if (log.n !== log.head || (log.n > 0 && (log.lo !== 0 || log.hi !== log.n - 1))) {
      w.violations.push(`5: log of ${w.sessionId} has ${log.n} events, indexes ${log.lo}..${log.hi}, head ${log.head}`)
    }
    // 9: an acknowledged Stop is in the log; one that landed on a run not over left its abort recorded, for good.
    const inLog = new Set(
      (await query<{ id: string }>(db, sql`select id from a2_events where session_id = ${w.sessionId} and type = 'cancelled'`)).map((e) => e.id),
    )
    const byId = new Map(jobs.map((j) => [Number(j.id), j] as const))
    for (const stop of w.stops) {
      if (stop.acked && !inLog.has(stop.id)) w.violations.push(`9: Stop ${stop.id} was acknowledged and is not in the log`)
      const job = byId.get(stop.jobId)!
      if (
        stop.landedOn !== undefined &&
        !TERMINAL.has(stop.landedOn) &&
        (job.cancelled_by === null || !['CANCELLING', 'CANCELLED', 'UNKNOWN'].includes(job.status))
      ) {
        w.violations.push(
          `9: Stop ${stop.id} landed on job ${stop.jobId} while ${stop.landedOn}; the job is ${job.status}, cancelled by ${job.cancelled_by}`,
        )
      }
    }
    w.waitingSeen.clear()
    for (const j of jobs) {
      w.attemptSeen.set(Number(j.id), Number(j.attempt))
      w.statusSeen.set(Number(j.id), j.status)
      if (w.heldRetries.has(`${Number(j.id)}:${Number(j.attempt)}`) && j.status === 'ACTIVE' && j.owner === null) w.waitingSeen.add(Number(j.id))
    }
    // 13: a call that may still be running, under the run's stored state.
    const calls = await checkCallsInFlight(db, w.name, w.calls, w.lastTransition)
    w.violations.push(...calls.violations)
    for (const state of new Set(calls.seen)) count(state)
    const [{ newest }] = await query<{ newest: number | null }>(
      db,
      sql`select max(t.id) as newest from a2_job_transitions t join a2_jobs j on j.id = t.job_id where j.consumer = ${w.name}`,
    )
    w.lastTransition = Number(newest ?? 0)
    if (w.violations.length > 0) throw new Error(`after step ${w.step} (${after}):\n  ${w.violations.join('\n  ')}`)
  }

  /**
   * Ends every run a sequence left open, so nothing of it outlives its property run. On a live
   * worker each handler is driven to its end — its effect let through, else told to throw, again
   * after every move (a stubborn handler back from its effect parks once more) — and its attempt
   * awaited until settled. A dead worker's attempts can never settle (their store hangs for good):
   * they are only told to end, and aborted.
   */
  async function teardown(w: World): Promise<void> {
    w.outage.restore()
    outageStepsLeft = undefined
    await landHeldSteps()
    for (const sim of w.workers) await sim.liveness.release()
    for (const run of w.attempts) {
      for (const left of run.orphans) left.open()
      if (w.workers[run.worker].dead) {
        run.effect?.open()
        run.send('throw')
        continue
      }
      while (run.entered && !run.ended) {
        const moved = run.nextMove()
        if (run.effect) run.effect.open()
        else run.send('throw')
        await watchdog(moved, `attempt ${run.attempt} of job ${run.jobId} to move at teardown`)
      }
      await watchdog(attemptObjects.get(run)!.done, `attempt ${run.attempt} of job ${run.jobId} to settle at teardown`)
    }
    for (const run of w.attempts) attemptObjects.get(run)?.abort(new RunAborted('SHUTDOWN'))
    attemptObjects.clear()
  }

  /**
   * Found by the property's first run (seed 20261201, path 20:1:6:8:12:19:18:19:16:13:12), its
   * shrunk counterexample kept: a Stop lands while the LAST attempt runs (its hint lost), then the
   * handler throws. settleFailed's ending said RETRY_REVOKED, though no retry was waiting to revoke;
   * the same failure on an earlier attempt says STOPPED_BY_CANCEL (scheduleRetry's
   * compare-and-set, detail retryRevoked), and so does this one now.
   */
  it('a Stop on the last attempt that then fails is recorded STOPPED_BY_CANCEL, not RETRY_REVOKED: no retry was waiting', async () => {
    const world = await makeWorld(false, true)
    try {
      await appendJob.run(world, world)
      await fc.asyncModelRun(
        () => ({ model: world, real: world }),
        [claim(0), act(0, 'throw'), retryDue, claim(0), cancel(0, false), act(0, 'throw')],
      )
    } finally {
      await teardown(world)
    }
  })

  /**
   * Found by reading drain.ts against the model: attempt 1 fails (a retry, last_error set),
   * attempt 2 dies mid-effect, the drain takes the run (attempt 3) and leaves it UNKNOWN, the
   * operator's verdict hands it back ACTIVE, and then a Stop lands. Nothing waits for a retry —
   * the run waits for the attempt the verdict gave it — but the drain read attempt 1's old
   * last_error and said RETRY_REVOKED. It now asks whether a retry was scheduled at the run's
   * current attempt, and says CANCELLED_BETWEEN_ATTEMPTS.
   */
  it('a Stop after an operator handed a run back is CANCELLED_BETWEEN_ATTEMPTS, not RETRY_REVOKED from an old failure', async () => {
    const world = await makeWorld(false, false, true) // overlapSafe: the killed owner's run is released at once
    currentScheduler = fc.sample(fc.scheduler(), { numRuns: 1, seed: 1 })[0]
    try {
      await appendJob.run(world, world)
      await fc.asyncModelRun(
        () => ({ model: world, real: world }),
        [claim(0), act(0, 'throw'), retryDue, claim(0), act(0, 'dispatch'), killMidEffect, drains, operatorResolves, cancel(0, false), drains],
      )
    } finally {
      await teardown(world)
    }
  })

  /**
   * Invariant 13's roads, as fixed sequences (each failed on main, the property's seed
   * reaching them too seldom to show it): a handler throws while its call runs and the retry
   * dispatches the call again beside it; the same on the last attempt, the run FAILED over the
   * call put back to INTENT; a drain forces a stubborn run out and dies after its take, and the
   * next drain ended it CANCELLED over the call put back to INTENT.
   */
  it('a handler that throws mid-call: its retry never dispatches the call again beside it', async () => {
    const world = await makeWorld(false, true)
    try {
      await appendJob.run(world, world)
      await fc.asyncModelRun(
        () => ({ model: world, real: world }),
        [claim(0), act(0, 'dispatch'), fx.throwMidEffect(0), retryDue, claim(1), act(1, 'dispatch'), fx.leftCallCompletes],
      )
    } finally {
      await teardown(world)
    }
  })

  it('a handler that throws mid-call on its last attempt: the run ends only from the call’s outcome, never FAILED over it', async () => {
    const world = await makeWorld(false, true)
    try {
      await appendJob.run(world, world)
      await fc.asyncModelRun(
        () => ({ model: world, real: world }),
        [claim(0), act(0, 'throw'), retryDue, claim(0), act(0, 'dispatch'), fx.throwMidEffect(0), fx.leftCallCompletes],
      )
    } finally {
      await teardown(world)
    }
  })

  it('a drain dies after forcing a run out: the next drain leaves the call UNKNOWN, never CANCELLED over it', async () => {
    const world = await makeWorld(true, true) // stubborn: the forced-out call runs on
    currentScheduler = fc.sample(fc.scheduler(), { numRuns: 1, seed: 1 })[0]
    try {
      await appendJob.run(world, world)
      await fc.asyncModelRun(
        () => ({ model: world, real: world }),
        [claim(1), act(1, 'dispatch'), cancel(0, false), fx.drainDiesAfterTake(0), drains, completeEffect(1)],
      )
    } finally {
      await teardown(world)
    }
  })

  it('a stalled owner’s lease lapses mid-call: the successor never takes "not done" for a call that may still run', async () => {
    const world = await makeWorld(true, true) // stubborn: the call runs on past the lease; the receiver answers truthfully
    try {
      await appendJob.run(world, world)
      await fc.asyncModelRun(() => ({ model: world, real: world }), [claim(0), act(0, 'dispatch'), lapse(0), claim(1), act(1, 'dispatch')])
    } finally {
      await teardown(world)
    }
  })

  it(
    `holds every invariant over ${RUNS} generated interleavings`,
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.scheduler(),
          fc.boolean(),
          // A reconcile hook that can look effects up in one run of four: without one, a dead
          // attempt's effect becomes UNKNOWN — the state whose handling most needs exploring.
          fc.nat(3).map((n) => n === 0),
          // Effects that may overlap (a killed owner's run released at once) or not (kept to its lease).
          fc.boolean(),
          fc.commands(commands, { maxCommands: 50, size: 'max', replayPath: REPLAY_PATH }),
          async (scheduler, stubborn, truthful, overlapSafe, cmds) => {
            currentScheduler = scheduler
            const world = await makeWorld(stubborn, truthful, overlapSafe)
            try {
              await appendJob.run(world, world) // every sequence starts with one generation to fight over
              await fc.asyncModelRun(() => ({ model: world, real: world }), cmds)
            } finally {
              await teardown(world)
            }
          },
        ),
        { numRuns: RUNS, seed: SEED, path: PATH, endOnFailure: false, verbose: 1 },
      )
      const reached = await query<{ status: string; n: number }>(
        base.db,
        sql`select status, count(*)::int as n from a2_jobs where consumer like 'il%' group by status order by status`,
      )
      const effectStates = await query<{ status: string; n: number }>(
        base.db,
        sql`select e.status, count(*)::int as n from a2_effects e join a2_jobs j on j.id = e.job_id where j.consumer like 'il%' group by e.status`,
      )
      const reasons = await query<{ reason: string; n: number }>(
        base.db,
        sql`select t.reason, count(*)::int as n from a2_job_transitions t join a2_jobs j on j.id = t.job_id where j.consumer like 'il%' group by t.reason order by n desc`,
      )
      if (process.env.FC_STATS) console.log({ kind, commands: Object.fromEntries(stats), runs: reached, effects: effectStates, reasons })
      // The generator must reach the states the invariants are about, or it proves nothing about them.
      expect(reached.map((r) => r.status)).toEqual(expect.arrayContaining(['CANCELLED', 'COMPLETED', 'FAILED']))
      expect(reasons.map((r) => r.reason)).toEqual(
        expect.arrayContaining(['CANCEL_APPENDED', 'OWNER_DIED', 'EFFECT_UNKNOWN', 'STOPPED_BY_CANCEL', 'FORCED_AFTER_GRACE', 'RETRY_REVOKED']),
      )
      // The outage and the Stops it catches: each way a push can end, and a Stop on every kind of open run.
      // Asserted for the fixed budget `npm test` runs; a random seed (FC_EXPLORE) may draw too few of
      // the rarest (a Stop on an UNKNOWN run: ~6 in 300 sequences), so there it is reported, not asserted.
      const required = [
        'claim races Stop',
        'Stop errored, landed',
        'Stop errored, not landed',
        'push errored, not landed',
        'Stop landed on UNKNOWN',
        'Stop landed on ACTIVE waiting for a retry',
        'claim refused by the outage',
        'store unreachable for a while',
        'step held by the outage',
        'handler threw mid-effect',
        'left call completed',
        'drain died holding a run',
        'Stop landed past the cap',
      ]
      const missing = required.filter((what) => !stats.has(what))
      if (SEED === undefined) {
        if (missing.length > 0) console.warn(`[explore] ${kind}: this seed's ${RUNS} sequences never reached`, missing)
      } else expect(missing).toEqual([])
    },
    Math.max(600_000, RUNS * 3_000),
  )
})
