/**
 * A worker claims jobs, runs their consumers and settles each attempt by DESIGN rule 4.
 * It also does the controller's duty: draining CANCELLING runs (also ones a dead
 * controller left behind), forcing out runs that ignore their signal past the grace
 * period, and failing jobs whose last attempt died.
 */
import { hostname } from 'node:os'
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { RunAborted, abortReason } from './abort'
import { busFor, type Hint } from './bus'
import type { Contract } from './contract'
import type { Consumer, RunContext } from './consumer'
import { EffectNotDispatched, EffectUnknown, applyVerdict, runEffect } from './effects'
import { isA2Error } from './errors'
import {
  backoffMs,
  claimJobs,
  completeJob,
  describeError,
  failureEvent,
  renewLease,
  scheduleRetry,
  settleJob,
  surrenderJob,
  whyNotHeld,
  type ClaimedJob,
} from './jobs'
import { read, type Fence, type ValidInput } from './log'
import { query, type Executor, type Store } from './store'
import { recordTransitions, type RunStatus } from './transitions'

export interface WorkerHooks {
  /** Race-suite seam: after an effect's state was read, before its dispatch compare-and-set. */
  beforeDispatch?: (job: { jobId: number; attempt: number }, key: string) => Promise<void>
}

export interface WorkerOptions {
  id?: string
  /** Attempts run at once by this worker. 64: chats are I/O bound; the database is the limit. */
  concurrency?: number
  /** Fallback poll when no NOTIFY arrives. 500 ms bounds the cost of a lost notification. */
  pollMs?: number
  /** A cancelled run that keeps going this long after CANCELLING is fenced out. Default 10 s. */
  graceMs?: number
  hooks?: WorkerHooks
}

/** What the worker needs from the server: its store, consumers and a fenced server-side append. */
export interface WorkerHost {
  store: Store
  contract: Contract
  consumers: ReadonlyMap<string, Consumer>
  append(
    sessionId: string,
    inputs: Array<{ id?: string; type: string; payload: unknown }>,
    options: { fence?: Fence; within?: (tx: Executor) => Promise<void> },
  ): Promise<{ events: import('./contract').A2Event[] }>
}

const DEFAULT_LEASE_MS = 15_000
const DEFAULT_MAX_ATTEMPTS = 3

interface Running {
  job: ClaimedJob
  abort: (reason: RunAborted) => void
  hasAbortOn: boolean
  done: Promise<void>
}

export class Worker {
  readonly id: string
  private readonly concurrency: number
  private readonly pollMs: number
  private readonly graceMs: number
  private readonly running = new Map<number, Running>()
  /** Cancels announced for jobs this worker may be about to start (NOTIFY can beat the claim's return). */
  private readonly recentCancels = new Map<number, { at: number; ref: { id: string; index: number } }>()
  private stopping = false
  private started = false
  private wake?: () => void
  private loopDone?: Promise<void>
  private unsubscribe?: () => void
  private lastDrain = 0

  constructor(
    private readonly host: WorkerHost,
    private readonly options: WorkerOptions = {},
  ) {
    this.id = options.id ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
    this.concurrency = options.concurrency ?? 64
    this.pollMs = options.pollMs ?? 500
    this.graceMs = options.graceMs ?? 10_000
  }

  get activeCount(): number {
    return this.running.size
  }

  async start(): Promise<this> {
    if (this.started) return this
    this.started = true
    const bus = await busFor(this.host.store)
    this.unsubscribe = bus.onAny((hint) => this.onHint(hint))
    this.loopDone = this.loop()
    return this
  }

  /** Stops claiming; lets in-flight attempts finish for `graceMs`, then aborts them (SHUTDOWN → surrendered). */
  async stop(options: { graceMs?: number } = {}): Promise<void> {
    if (!this.started || this.stopping) return
    this.stopping = true
    this.unsubscribe?.()
    this.wake?.()
    await this.loopDone
    const all = () => Promise.allSettled([...this.running.values()].map((r) => r.done))
    if (this.running.size > 0) {
      await Promise.race([all(), delay(options.graceMs ?? 5_000)])
      for (const run of this.running.values()) run.abort(new RunAborted('SHUTDOWN'))
      await Promise.race([all(), delay(2_000)])
    }
  }

  private onHint(hint: Hint): void {
    for (const [jobId, version, id, index] of hint.c ?? []) {
      void version
      const run = this.running.get(jobId)
      if (run) {
        if (run.hasAbortOn) run.abort(new RunAborted('CANCELLED', { id, index }))
      } else {
        this.recentCancels.set(jobId, { at: Date.now(), ref: { id, index } })
      }
    }
    if (hint.j || hint.c) this.wake?.()
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      let claimed = 0
      try {
        if (Date.now() - this.lastDrain >= this.pollMs) {
          this.lastDrain = Date.now()
          await this.drain()
        }
        claimed = await this.claimAndRun()
      } catch (error) {
        if (!this.stopping) console.error('[a2] worker tick failed', describeError(error).message)
      }
      if (this.stopping) break
      if (claimed > 0 && this.running.size < this.concurrency) continue
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.pollMs)
        this.wake = () => {
          clearTimeout(timer)
          this.wake = undefined
          resolve()
        }
      })
    }
  }

  private async claimAndRun(): Promise<number> {
    const free = this.concurrency - this.running.size
    if (free <= 0) return 0
    const leaseMs: Record<string, number> = {}
    for (const [name, c] of this.host.consumers) leaseMs[name] = c.options.leaseMs ?? DEFAULT_LEASE_MS
    const claimStartedAt = performance.now()
    const jobs = await claimJobs(this.host.store.db, {
      consumers: [...this.host.consumers.keys()],
      owner: this.id,
      leaseMs,
      limit: Math.min(free, 16),
    })
    for (const job of jobs) this.startAttempt(job, claimStartedAt)
    return jobs.length
  }

  private startAttempt(job: ClaimedJob, claimStartedAt: number): void {
    const consumer = this.host.consumers.get(job.consumer)!
    const leaseMs = consumer.options.leaseMs ?? DEFAULT_LEASE_MS
    const controller = new AbortController()
    const fence: Fence = { jobId: job.id, attempt: job.attempt }
    const abort = (reason: RunAborted) => {
      if (!controller.signal.aborted) controller.abort(reason)
    }
    const hasAbortOn = consumer.options.abortOn !== undefined
    const db = this.host.store.db

    // The lease clock is local and monotonic: measured from before the claim was sent, so
    // it can only err early. It fires while the store is unreachable — no query needed.
    let deadline = claimStartedAt + leaseMs
    let expiry: ReturnType<typeof setTimeout> | undefined
    const armExpiry = () => {
      clearTimeout(expiry)
      expiry = setTimeout(() => abort(new RunAborted('CLAIM_EXPIRED')), Math.max(0, deadline - performance.now()))
    }
    armExpiry()
    let renewing = false
    const renewal = setInterval(async () => {
      if (renewing || controller.signal.aborted) return
      renewing = true
      const sentAt = performance.now()
      try {
        const renewed = await renewLease(db, fence, this.id, leaseMs)
        if (!renewed.held) abort(new RunAborted(await whyNotHeld(db, fence)))
        else {
          deadline = sentAt + leaseMs
          armExpiry()
          if (renewed.status === 'CANCELLING' && hasAbortOn && renewed.cancelledBy) {
            abort(new RunAborted('CANCELLED', renewed.cancelledBy))
          }
        }
      } catch {
        // Unreachable store: the expiry timer decides.
      } finally {
        renewing = false
      }
    }, Math.max(50, Math.floor(leaseMs / 3)))

    const early = this.recentCancels.get(job.id)
    if (early && hasAbortOn) abort(new RunAborted('CANCELLED', early.ref))

    const run: Running = { job, abort, hasAbortOn, done: Promise.resolve() }
    this.running.set(job.id, run)
    run.done = (async () => {
      let returned = false
      let error: unknown
      try {
        const [event] = await read(db, job.sessionId, { after: job.eventIndex - 1, limit: 1 })
        const ctx = this.context(job, event, controller.signal, fence)
        await consumer.handler(ctx as never)
        returned = true
      } catch (thrown) {
        error = thrown
      } finally {
        clearInterval(renewal)
        clearTimeout(expiry)
      }
      try {
        await this.settle(job, fence, consumer, controller.signal, returned, error)
      } catch (settleError) {
        console.error(`[a2] could not settle job ${job.id} attempt ${job.attempt}`, describeError(settleError).message)
      } finally {
        this.running.delete(job.id)
        this.recentCancels.delete(job.id)
        this.wake?.()
      }
    })()
  }

  private context(job: ClaimedJob, event: unknown, signal: AbortSignal, fence: Fence): RunContext<Contract, string> {
    const { host } = this
    const hooks = this.options.hooks
    return {
      event: event as never,
      signal,
      attempt: job.attempt,
      jobId: job.id,
      sessionId: job.sessionId,
      read: (options = {}) => read(host.store.db, job.sessionId, options) as never,
      append: async (...inputs) => {
        const { events } = await host.append(job.sessionId, inputs as ValidInput[], { fence })
        return events as never
      },
      effect: (key, fn, options) =>
        runEffect(
          host.store.db,
          {
            fence,
            cancelVersion: job.cancelVersion,
            signal,
            beforeDispatch: hooks?.beforeDispatch ? (k) => hooks.beforeDispatch!(fence, k) : undefined,
          },
          key,
          fn,
          options,
        ),
    }
  }

  /** DESIGN rule 4: how an attempt ends, each path a fenced compare-and-set. */
  private async settle(
    job: ClaimedJob,
    fence: Fence,
    consumer: Consumer,
    signal: AbortSignal,
    returned: boolean,
    error: unknown,
  ): Promise<void> {
    const db = this.host.store.db
    const reason = abortReason(signal)
    if (reason?.code === 'FENCED_OUT') return // the controller already settled this run
    if (returned) {
      await completeJob(db, fence)
      return
    }
    if (error instanceof EffectUnknown) {
      if (!(await settleJob(db, fence, 'ACTIVE', 'UNKNOWN', 'EFFECT_UNKNOWN', describeError(error)))) {
        await settleJob(db, fence, 'CANCELLING', 'UNKNOWN', 'EFFECT_UNKNOWN', describeError(error))
      }
      return
    }
    if (reason?.isCancel || error instanceof EffectNotDispatched) {
      await settleJob(db, fence, 'CANCELLING', 'CANCELLED', 'STOPPED_BY_CANCEL', { by: reason?.event })
      return
    }
    if (reason?.isLeaseLoss) {
      if (job.attempt < job.maxAttempts) await surrenderJob(db, fence, reason.code)
      else await this.fail(job, fence, { message: `lost its claim on the last attempt (${reason.code})`, code: reason.code })
      return
    }
    if (isA2Error(error, 'fenced')) return // a successor or the controller owns the job now
    const failure = describeError(error)
    if (job.attempt < job.maxAttempts) {
      await scheduleRetry(db, fence, backoffMs(job.attempt), failure)
    } else {
      await this.fail(job, fence, failure)
    }
  }

  /** Out of attempts: FAILED and an `a2.failed` event in the log, committed together. */
  private async fail(job: ClaimedJob, fence: Fence, failure: { message: string; code?: string }): Promise<void> {
    const db = this.host.store.db
    let settled: RunStatus | undefined
    try {
      await this.host.append(
        job.sessionId,
        [{ id: `failed-${job.id}`, ...failureEvent(job, job.attempt, failure) }],
        {
          within: async (tx) => {
            if (await settleJob(tx, fence, 'ACTIVE', 'FAILED', 'ATTEMPTS_EXHAUSTED', failure)) settled = 'FAILED'
            else if (await settleJob(tx, fence, 'CANCELLING', 'CANCELLED', 'RETRY_REVOKED', failure)) settled = 'CANCELLED'
            if (settled !== 'FAILED') throw new FailAborted()
          },
        },
      )
    } catch (error) {
      if (!(error instanceof FailAborted)) throw error
      if (settled === 'CANCELLED') await settleJob(db, fence, 'CANCELLING', 'CANCELLED', 'RETRY_REVOKED', failure)
    }
  }

  /**
   * The controller's drain: settles CANCELLING runs nobody is running (never claimed,
   * waiting for a retry, or their owner died) and forces out runs past the grace period;
   * fails jobs whose last attempt's lease ran out. Safe on any number of workers at once:
   * every step is a compare-and-set.
   */
  private async drain(): Promise<void> {
    const db = this.host.store.db
    const stuck = await query<{ id: number; attempt: number; owner: string | null; live: boolean; last_error: unknown; consumer: string }>(
      db,
      sql`select id, attempt, owner, consumer, last_error,
                 (owner is not null and lease_until >= now()) as live
          from a2_jobs
          where status = 'CANCELLING'
            and (owner is null or lease_until < now() or cancelling_since < now() - ${this.graceMs} * interval '1 millisecond')
          order by cancelling_since limit 100`,
    )
    for (const job of stuck) {
      const id = Number(job.id)
      if (this.running.has(id) && job.live) {
        this.running.get(id)!.abort(new RunAborted('FENCED_OUT'))
      }
      const reason = job.live
        ? 'FORCED_AFTER_GRACE'
        : job.attempt === 0
          ? 'CANCELLED_BEFORE_START'
          : job.owner === null && job.last_error
            ? 'RETRY_REVOKED'
            : job.owner === null
              ? 'CANCELLED_BETWEEN_ATTEMPTS'
              : 'DRAINED_AFTER_OWNER_LOST'
      await this.settleCancelling({ jobId: id, attempt: job.attempt }, job.consumer, reason)
    }

    const exhausted = await query<{ id: number; attempt: number; session_id: string; event_id: string; consumer: string; max_attempts: number }>(
      db,
      sql`select id, attempt, session_id, event_id, consumer, max_attempts from a2_jobs
          where status = 'ACTIVE' and owner is not null and lease_until < now() and attempt >= max_attempts
          limit 100`,
    )
    for (const job of exhausted) {
      const claimed: ClaimedJob = {
        id: Number(job.id),
        sessionId: job.session_id,
        eventIndex: -1,
        eventId: job.event_id,
        consumer: job.consumer,
        attempt: job.attempt,
        maxAttempts: job.max_attempts,
        cancelVersion: 0,
      }
      await this.fail(claimed, { jobId: claimed.id, attempt: job.attempt }, {
        message: `the worker running attempt ${job.attempt} stopped renewing its lease`,
        code: 'LEASE_EXPIRED',
      }).catch(() => {})
    }
  }

  /** CANCELLING → CANCELLED, or UNKNOWN while an effect of the run cannot be reconciled. */
  private async settleCancelling(fence: Fence, consumerName: string, reason: string): Promise<void> {
    const db = this.host.store.db
    const inFlight = await query<{ key: string }>(
      db,
      sql`select key from a2_effects where job_id = ${fence.jobId} and status = 'DISPATCHED'`,
    )
    const reconcile = this.host.consumers.get(consumerName)?.options.reconcile
    let unknown = false
    for (const { key } of inFlight) {
      const verdict = reconcile ? await reconcile(key).catch(() => 'unknown' as const) : 'unknown'
      try {
        await applyVerdict(db, fence.jobId, fence.attempt, key, verdict)
      } catch (error) {
        if (error instanceof EffectUnknown) unknown = true
        else throw error
      }
    }
    await settleJob(db, fence, 'CANCELLING', unknown ? 'UNKNOWN' : 'CANCELLED', unknown ? 'EFFECT_UNKNOWN' : reason)
  }
}

class FailAborted extends Error {}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref?.())
}

export { DEFAULT_LEASE_MS, DEFAULT_MAX_ATTEMPTS, recordTransitions }
