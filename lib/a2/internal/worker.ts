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
import type { A2Event, Contract } from './contract'
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
import type { RunStatus } from './transitions'

export interface WorkerHooks {
  /** Race-suite seam: after an effect's state was read, before its dispatch compare-and-set. */
  beforeDispatch?: (job: { jobId: number; attempt: number }, key: string) => Promise<void>
  /** Race-suite seam: after the claim committed, before the start boundary's check and the handler. */
  afterClaim?: (job: { jobId: number; attempt: number; sessionId: string; eventId: string }) => Promise<void>
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
  /** Renews now and reads the run's durable status (for a cancel whose hint was too big to carry). */
  recheck: () => Promise<void>
  done: Promise<void>
}

/** Attempts are tracked per (job, attempt): a worker may reclaim its own lapsed job while the old attempt unwinds. */
const runKey = (jobId: number, attempt: number) => `${jobId}:${attempt}`

export class Worker {
  readonly id: string
  private readonly concurrency: number
  private readonly pollMs: number
  private readonly graceMs: number
  private readonly running = new Map<string, Running>()
  private stopping = false
  private stopped?: Promise<void>
  private started = false
  private wake?: () => void
  /** Set by every wake-up; a wake-up that lands while a claim is in flight must not be lost. */
  private woken = false
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
  stop(options: { graceMs?: number } = {}): Promise<void> {
    if (!this.started) return Promise.resolve()
    this.stopped ??= (async () => {
      this.stopping = true
      this.unsubscribe?.()
      this.wakeUp()
      await this.loopDone
      const all = () => Promise.allSettled([...this.running.values()].map((r) => r.done))
      if (this.running.size > 0) {
        await within(all(), options.graceMs ?? 5_000)
        for (const run of this.running.values()) run.abort(new RunAborted('SHUTDOWN'))
        await within(all(), 2_000)
      }
    })()
    return this.stopped
  }

  private wakeUp(): void {
    this.woken = true
    this.wake?.()
  }

  private runsOf(jobId: number): Running[] {
    return [...this.running.values()].filter((run) => run.job.id === jobId)
  }

  private onHint(hint: Hint): void {
    for (const [jobId, , id, index] of hint.c ?? []) {
      for (const run of this.runsOf(jobId)) {
        if (run.hasAbortOn) run.abort(new RunAborted('CANCELLED', { id, index }))
      }
    }
    // Too many cancels for one NOTIFY: every running attempt with abortOn rechecks its row.
    if (hint.C) for (const run of this.running.values()) if (run.hasAbortOn) void run.recheck()
    if (hint.j || hint.c || hint.C) this.wakeUp()
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      // Cleared before the tick: a hint or a finished run during the tick makes the loop go round again.
      this.woken = false
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
      if (this.running.size < this.concurrency && (claimed > 0 || this.woken)) continue
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer)
          this.wake = undefined
          resolve()
        }
        const timer = setTimeout(done, this.pollMs)
        this.wake = done
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
    // Once the run is over, a renewal still in flight must neither re-arm the expiry timer
    // (a timer leaked for up to a lease) nor abort anything.
    let finished = false

    // The lease clock is local and monotonic: measured from before the claim was sent, so
    // it can only err early. It fires while the store is unreachable — no query needed.
    let deadline = claimStartedAt + leaseMs
    let expiry: ReturnType<typeof setTimeout> | undefined
    const armExpiry = () => {
      clearTimeout(expiry)
      if (finished) return
      expiry = setTimeout(() => abort(new RunAborted('CLAIM_EXPIRED')), Math.max(0, deadline - performance.now()))
    }
    armExpiry()
    let renewing = false
    const renew = async () => {
      if (renewing || controller.signal.aborted) return
      renewing = true
      const sentAt = performance.now()
      try {
        const renewed = await renewLease(db, fence, this.id, leaseMs)
        // Aborted meanwhile (e.g. CLAIM_EXPIRED fired while this renewal was in flight): the
        // attempt is surrendering; its late renewal must not re-arm anything.
        if (finished || controller.signal.aborted) return
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
    }
    const renewal = setInterval(renew, Math.max(50, Math.floor(leaseMs / 3)))

    const run: Running = { job, abort, hasAbortOn, recheck: renew, done: Promise.resolve() }
    const key = runKey(job.id, job.attempt)
    this.running.set(key, run)
    run.done = (async () => {
      let returned = false
      let started = false
      let error: unknown
      try {
        await this.options.hooks?.afterClaim?.({ jobId: job.id, attempt: job.attempt, sessionId: job.sessionId, eventId: job.eventId })
        // The start boundary reads the durable state, not only the NOTIFY: a cancel that
        // committed after the claim (its hint possibly lost) stops the run before it starts.
        const start = await startState(db, job)
        if (!start.held) abort(new RunAborted(start.attempt !== job.attempt ? 'SUPERSEDED_ATTEMPT' : 'FENCED_OUT'))
        else if (start.cancelledBy && hasAbortOn) abort(new RunAborted('CANCELLED', start.cancelledBy))
        const reason = abortReason(controller.signal)
        if (!reason?.isCancel && reason?.code !== 'SUPERSEDED_ATTEMPT' && reason?.code !== 'FENCED_OUT') {
          started = true
          const ctx = this.context(job, start.event, controller.signal, fence)
          await consumer.handler(ctx as never)
          returned = true
        }
      } catch (thrown) {
        error = thrown
      } finally {
        finished = true
        clearInterval(renewal)
        clearTimeout(expiry)
      }
      try {
        if (started || error !== undefined) await this.settle(job, fence, controller.signal, returned, error)
        else if (abortReason(controller.signal)?.isCancel) {
          // Never started: CANCELLING → CANCELLED (or UNKNOWN while a dead attempt's effect cannot be reconciled).
          await this.settleCancelling(fence, job.consumer, 'CANCELLED_BEFORE_START')
        }
      } catch (settleError) {
        console.error(`[a2] could not settle job ${job.id} attempt ${job.attempt}`, describeError(settleError).message)
      } finally {
        this.running.delete(key)
        this.wakeUp()
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
    if (reason?.code === 'SHUTDOWN') {
      // Not the run's fault: the attempt is given back with its budget refunded.
      await surrenderJob(db, fence, reason.code, { refund: true })
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
      await scheduleRetry(db, fence, backoffMs(job.attempt), failure, 'STOPPED_BY_CANCEL')
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
        // One per (job, attempt): an id seen before would make the append a duplicate and skip `within`.
        [{ id: `failed-${job.id}-${job.attempt}`, ...failureEvent(job, job.attempt, failure) }],
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
      if (job.live) for (const run of this.runsOf(id)) run.abort(new RunAborted('FENCED_OUT'))
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

/** Waits for `promise` at most `ms`, and clears its timer either way (no timer outlives a stop). */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))])
  } finally {
    clearTimeout(timer)
  }
}

interface StartState {
  held: boolean
  attempt: number
  cancelledBy?: { id: string; index: number }
  event: A2Event
}

/** The job's state and its trigger event, read once as the attempt starts. */
async function startState(db: Executor, job: ClaimedJob): Promise<StartState> {
  const [row] = await query<{
    status: RunStatus
    attempt: number
    cancelled_by: { id: string; index: number } | null
    id: string
    session_id: string
    index: number
    type: string
    payload: unknown
    created_at: string | Date
  }>(
    db,
    sql`select j.status, j.attempt, j.cancelled_by, e.id, e.session_id, e.index, e.type, e.payload, e.created_at
        from a2_jobs j join a2_events e on e.session_id = j.session_id and e.index = j.event_index
        where j.id = ${job.id}`,
  )
  if (!row) throw new Error(`job ${job.id} has no trigger event`)
  const held = row.attempt === job.attempt && (row.status === 'ACTIVE' || row.status === 'CANCELLING')
  return {
    held,
    attempt: row.attempt,
    cancelledBy: row.status === 'CANCELLING' && row.cancelled_by ? { id: row.cancelled_by.id, index: row.cancelled_by.index } : undefined,
    event: {
      id: row.id,
      sessionId: row.session_id,
      index: row.index,
      type: row.type,
      payload: row.payload,
      createdAt: new Date(row.created_at).toISOString(),
    },
  }
}

export { DEFAULT_MAX_ATTEMPTS }
