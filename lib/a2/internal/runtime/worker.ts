/**
 * A worker is the claim loop: it claims runnable jobs up to its concurrency, starts one
 * Attempt (attempt.ts) per claim, routes cancel hints to the attempts it runs, and runs the
 * drain (drain.ts) on every poll tick. How one attempt lives and ends is attempt.ts's job.
 */
import { hostname } from 'node:os'
import { randomUUID } from 'node:crypto'
import { RunAborted } from '../core/abort'
import { Attempt } from './attempt'
import { busFor, type Hint } from '../log/bus'
import { drainOnce, OWNER_GONE_CONFIRM_MS } from './drain'
import { leaseMsOf, type RuntimeHost, type WorkerHooks } from './runtime-host'
import { claimJobs, describeError } from './jobs'
import { livenessFor, type Liveness } from './liveness'
import { isStoreUnreachable } from '../store/outage'

export type { WorkerHooks } from './runtime-host'

export interface WorkerOptions {
  id?: string
  /** Attempts run at once by this worker. 64: chats are I/O bound; the database is the limit. */
  concurrency?: number
  /** Fallback poll when no NOTIFY arrives. 500 ms bounds the cost of a lost notification. */
  pollMs?: number
  /** A cancelled run that keeps going this long after CANCELLING is fenced out. Default 10 s. */
  graceMs?: number
  /**
   * Runs an earlier attempt started (taken over after a crash or a restart) are claimed only
   * once this worker has been up this long; new runs at once. After a restart, the Stops that
   * browsers kept while the server was down (they re-send every second) land first, so a run
   * its reader stopped is not asked of the model again. Default 0; the chat sets 3 s.
   */
  resumeAfterMs?: number
  hooks?: WorkerHooks
}

/** Attempts are tracked per (job, attempt): a worker may reclaim its own lapsed job while the old attempt unwinds. */
const attemptKey = (jobId: number, attempt: number) => `${jobId}:${attempt}`

export class Worker {
  readonly id: string
  private readonly concurrency: number
  private readonly pollMs: number
  private readonly graceMs: number
  private readonly running = new Map<string, Attempt>()
  private stopping = false
  private stopped?: Promise<void>
  private started = false
  private wake?: () => void
  /** Set by every wake-up; a wake-up that lands while a claim is in flight must not be lost. */
  private woken = false
  private loopDone?: Promise<void>
  private unsubscribe?: () => void
  private lastDrain = 0
  private draining?: Promise<void>
  private liveness?: Liveness
  /** Owner keys the drain found gone, and since when (drain.ts: seen twice before released). */
  private readonly suspects = new Map<number, number>()
  private confirming?: ReturnType<typeof setTimeout>
  /** Whether the last tick found this process's liveness lock lost (logged once per loss). */
  private lockLost = false
  /** Whether a tick failed for an outage since the last claim that went through (logged once). */
  private storeAway = false
  private startedAt = 0
  /** Claims sent whose jobs are not registered as attempts yet. */
  private claiming = 0
  /** Cancel hints that found no attempt while a claim was in flight: its jobs may be theirs (heldHints). */
  private heldCancels: NonNullable<Hint['cancels']> = []
  private heldRecheck = false

  constructor(
    private readonly host: RuntimeHost,
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
    this.startedAt = performance.now()
    this.liveness = await livenessFor(this.host.store)
    const bus = await busFor(this.host.store)
    this.unsubscribe = bus.onAny((hint) => this.onHint(hint))
    this.loopDone = this.loop()
    return this
  }

  /**
   * Stops claiming and hands every running attempt over at once: SHUTDOWN fires their
   * signals, each is surrendered with its attempt refunded, and the surrender wakes the
   * other workers, so an answer continues elsewhere within a claim, not a lease. With
   * `graceMs`, in-flight attempts get that long to finish first.
   */
  stop(options: { graceMs?: number } = {}): Promise<void> {
    if (!this.started) return Promise.resolve()
    this.stopped ??= (async () => {
      this.stopping = true
      clearTimeout(this.confirming)
      this.unsubscribe?.()
      this.wakeUp()
      await this.loopDone
      await this.draining
      const all = () => Promise.allSettled([...this.running.values()].map((a) => a.done))
      if (this.running.size > 0) {
        if (options.graceMs) await within(all(), options.graceMs)
        for (const attempt of this.running.values()) attempt.abort(new RunAborted('SHUTDOWN'))
        await within(all(), 2_000)
      }
      // Its runs are surrendered or over: nothing left that others must see it alive for.
      await this.liveness?.release()
    })()
    return this.stopped
  }

  private wakeUp(): void {
    this.woken = true
    this.wake?.()
  }

  private attemptsOf(jobId: number): Attempt[] {
    return [...this.running.values()].filter((a) => a.job.id === jobId)
  }

  /**
   * A Stop's hint reaches the attempts of its run. One that lands while a claim is in flight may
   * be for a job that claim took: the claim committed before the Stop did, so neither its answer
   * nor the start (which starts from the claim's read, attempt.ts) knows of it, and the attempt
   * is not registered yet. Such hints are held and handed to the claim's attempts as they
   * register; dropped, the run would stream on until its next renewal — 10 s with a 30 s lease
   * (effects-in-flight.test.ts).
   */
  private onHint(hint: Hint): void {
    for (const cancel of hint.cancels ?? []) {
      const attempts = this.attemptsOf(cancel.jobId)
      for (const attempt of attempts) attempt.cancelled({ id: cancel.eventId, index: cancel.eventIndex })
      if (attempts.length === 0 && this.claiming > 0) this.heldCancels.push(cancel)
    }
    // Too many cancels for one NOTIFY: every running attempt with abortOn rechecks its row.
    if (hint.recheckCancels) for (const attempt of this.running.values()) if (attempt.hasAbortOn) void attempt.renew()
    if (hint.recheckCancels && this.claiming > 0) this.heldRecheck = true
    if (hint.newJobs || hint.cancels || hint.recheckCancels) this.wakeUp()
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      // Cleared before the tick: a hint or a finished run during the tick makes the loop go round again.
      this.woken = false
      // The drain runs beside the claims, never in their way: a NOTIFY's job waited for a drain
      // due in its tick (2–30 ms on a loaded box, about one wake-up in 20; bench/README.md, "The
      // drain beside the claims"). The claim is sent first, and the two fail apart: a drain error must
      // not cost a tick its claims, nor a claim error its drain.
      const claiming = this.claimAndStart().catch((error) => (this.tickFailed('claim', error), 0))
      this.drainIfDue()
      const claimed = await claiming
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

  /** Starts a drain when one is due and none is running (drain.ts); stop() waits for it. */
  private drainIfDue(): void {
    if (this.stopping || this.draining || Date.now() - this.lastDrain < this.pollMs) return
    this.lastDrain = Date.now()
    this.draining = drainOnce(this.host, {
      owner: this.id,
      liveness: this.liveness,
      suspects: this.suspects,
      graceMs: this.graceMs,
      forceOut: (jobId) => {
        for (const attempt of this.attemptsOf(jobId)) attempt.abort(new RunAborted('FENCED_OUT'))
      },
    })
      .catch((error) => this.tickFailed('drain', error))
      .finally(() => {
        this.draining = undefined
        this.confirmSuspectsSoon()
      })
  }

  /**
   * An owner first seen gone is looked at again OWNER_GONE_CONFIRM_MS later, not at the next
   * tick (500 ms): a killed worker's answer then moves ~200 ms sooner (bench figure 7).
   */
  private confirmSuspectsSoon(): void {
    const now = performance.now()
    if (this.stopping || this.confirming || ![...this.suspects.values()].some((since) => now - since < OWNER_GONE_CONFIRM_MS)) return
    this.confirming = setTimeout(() => {
      this.confirming = undefined
      this.lastDrain = 0 // due now
      this.wakeUp()
    }, OWNER_GONE_CONFIRM_MS)
    this.confirming.unref?.()
  }

  private tickFailed(what: string, error: unknown): void {
    if (this.stopping) return
    // An outage fails every tick (ten a second): said once, until a tick's claim goes through.
    if (isStoreUnreachable(error)) {
      if (!this.storeAway) console.warn(`[a2] worker ${this.id}: store unreachable; trying again every tick`)
      this.storeAway = true
      return
    }
    console.error(`[a2] worker ${what} failed`, describeError(error).message)
  }

  private async claimAndStart(): Promise<number> {
    const free = this.concurrency - this.running.size
    if (free <= 0) return 0
    // Without its lock this process could be judged dead: it claims nothing until the lock is
    // back (store.ts takes it again within ~1 s of the store answering), and says so once.
    if (this.liveness?.held?.() === false) {
      if (!this.lockLost) console.warn(`[a2] worker ${this.id}: liveness lock lost (store unreachable?); claiming nothing until it is held again`)
      this.lockLost = true
      return 0
    }
    if (this.lockLost) console.warn(`[a2] worker ${this.id}: liveness lock held again; claiming`)
    this.lockLost = false
    const leaseMs: Record<string, number> = {}
    for (const [name, c] of this.host.consumers) leaseMs[name] = leaseMsOf(c)
    const claimStartedAt = performance.now()
    this.claiming++
    try {
      const jobs = await claimJobs(this.host.store.db, {
        consumers: [...this.host.consumers.keys()],
        owner: this.id,
        ownerKey: this.liveness?.key,
        resume: performance.now() - this.startedAt >= (this.options.resumeAfterMs ?? 0),
        leaseMs,
        limit: Math.min(free, 16),
      })
      this.storeAway = false
      const started: Attempt[] = []
      for (const job of jobs) {
        const attempt = new Attempt(this.host, job, this.host.consumers.get(job.consumer)!, this.id, claimStartedAt, this.options.hooks)
        const key = attemptKey(job.id, job.attempt)
        this.running.set(key, attempt)
        started.push(attempt)
        void attempt.done.finally(() => {
          this.running.delete(key)
          this.wakeUp()
        })
      }
      this.handHeldHints(started)
      return jobs.length
    } finally {
      if (--this.claiming === 0) {
        this.heldCancels = []
        this.heldRecheck = false
      }
    }
  }

  /** The hints held while the claim was in flight, to the attempts it started (onHint). */
  private handHeldHints(started: Attempt[]): void {
    for (const attempt of started) {
      for (const cancel of this.heldCancels) {
        if (cancel.jobId === attempt.job.id) attempt.cancelled({ id: cancel.eventId, index: cancel.eventIndex })
      }
      if (this.heldRecheck && attempt.hasAbortOn) void attempt.renew()
    }
  }
}

/** Waits for `promise` at most `ms`, and clears its timer either way (no timer outlives a stop). */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))])
  } finally {
    clearTimeout(timer)
  }
}
