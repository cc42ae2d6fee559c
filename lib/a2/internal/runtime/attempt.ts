/**
 * One attempt of one job, top to bottom: the lease clock and its renewal, the start
 * boundary, the handler, and how it ends (settle.ts). `abort` is the one place the run's
 * signal fires; `cancelled` is the one place a cancel reaches a running attempt, whichever
 * path found it (the NOTIFY hint, a renewal, the start check).
 */
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { RunAborted, abortReason, type EventRef } from '../core/abort'
import type { A2Event, Contract } from '../core/contract'
import type { Consumer, RunContext } from './consumer'
import { DispatchesInFlight, runEffect } from './effects'
import { leaseMsOf, type RuntimeHost, type WorkerHooks } from './runtime-host'
import { describeError, renewLease, whyNotHeld, type ClaimedJob } from './jobs'
import { isA2Error } from '../core/errors'
import { landedAlready, read } from '../log/append'
import { throughOutage } from '../store/outage'
import { callOnEnded } from './on-ended'
import { foldSession } from '../log/checkpoints'
import { eventFromRow, type EventRow } from '../log/event-row'
import type { Fence, ValidInput } from '../core/types'
import { endWithEvents, settleAttempt, settleRun } from './settle'
import { stopped } from './end-runs'
import { query, sqlState, type Executor } from '../store/store'
import type { RunStatus } from '../core/transitions'

/** A renewal the store refused is sent again this soon: the lease is back within 250 ms of the store. */
const RENEW_RETRY_MS = 250

export class Attempt {
  readonly fence: Fence
  readonly hasAbortOn: boolean
  /** Settles once the attempt is over and its outcome recorded (or recording failed). */
  readonly done: Promise<void>
  private readonly controller = new AbortController()
  private readonly leaseMs: number
  /** Local and monotonic: measured from before the claim was sent, so it can only err early. */
  private deadline: number
  private expiry?: ReturnType<typeof setTimeout>
  private renewal?: ReturnType<typeof setInterval>
  private renewing = false
  /** Once over, a renewal still in flight must neither re-arm the expiry timer nor abort anything. */
  private finished = false
  /** Whether the handler called ctx.effect: the only way a first attempt's job gets an effect row. */
  private effectsUsed = false
  /** The claim was lost (lease, successor, drain, shutdown), whenever it was: outage retries stop. */
  private claimGone = false
  /** The handler ended the run itself, with its terminal events (`ctx.end`): nothing is left to settle. */
  private ended = false
  /** Its dispatches in flight: the ending waits for them, so it sees each one that passed (effects.ts). */
  readonly dispatches = new DispatchesInFlight()

  constructor(
    private readonly host: RuntimeHost,
    readonly job: ClaimedJob,
    private readonly consumer: Consumer,
    private readonly owner: string,
    claimStartedAt: number,
    private readonly hooks: WorkerHooks = {},
  ) {
    this.fence = { jobId: job.id, attempt: job.attempt }
    this.hasAbortOn = consumer.options.abortOn !== undefined
    this.leaseMs = leaseMsOf(consumer)
    this.deadline = claimStartedAt + this.leaseMs
    this.armExpiry()
    this.renewal = setInterval(() => void this.renew(), Math.max(50, Math.floor(this.leaseMs / 3)))
    this.done = this.run()
  }

  get signal(): AbortSignal {
    return this.controller.signal
  }

  /** Fires the run's signal once, with a typed reason. */
  abort(reason: RunAborted): void {
    // Also after the signal fired or the handler ended: an ending sent again through an
    // outage stops once the claim is gone (a successor, the drain, a shutdown owns the run).
    if (reason.isLeaseLoss || reason.code === 'FENCED_OUT') this.claimGone = true
    if (!this.controller.signal.aborted) this.controller.abort(reason)
  }

  /** A cancel of this run was recorded: the signal fires for consumers that asked (abortOn). */
  cancelled(by: EventRef): void {
    if (this.hasAbortOn) this.abort(new RunAborted('CANCELLED', by))
  }

  /**
   * Renews the lease now and reads the run's durable status (also how a too-big cancel hint
   * is checked). Renewal goes on after a Stop fired the signal: a run that unwinds
   * cooperatively keeps its claim (and its last appends) until it returns or the grace
   * period forces it out. After a lost claim there is nothing left to renew.
   */
  async renew(): Promise<void> {
    if (this.renewing || this.finished || abortReason(this.signal)?.isLeaseLoss || abortReason(this.signal)?.code === 'FENCED_OUT') return
    this.renewing = true
    const sentAt = performance.now()
    const db = this.host.store.db
    try {
      const renewed = await renewLease(db, this.fence, this.owner, this.leaseMs)
      // The claim was lost meanwhile (e.g. CLAIM_EXPIRED fired while this renewal was in
      // flight): the attempt is surrendering; its late renewal must not re-arm anything.
      const lost = abortReason(this.signal)
      if (this.finished || lost?.isLeaseLoss || lost?.code === 'FENCED_OUT') return
      if (!renewed.held) this.abort(new RunAborted(await whyNotHeld(db, this.fence)))
      else {
        this.deadline = sentAt + this.leaseMs
        this.armExpiry()
        if (renewed.status === 'CANCELLING' && renewed.cancelledBy) this.cancelled(renewed.cancelledBy)
      }
    } catch {
      // Unreachable store: the expiry timer decides, and the renewal is tried again soon (not
      // in a third of the lease): a lease renewed as the store answers again outlives an
      // outage of up to the whole lease, not only of the two thirds left at the last renewal.
      this.renewSoon()
    } finally {
      this.renewing = false
    }
  }

  private retryRenewal?: ReturnType<typeof setTimeout>
  private renewSoon(): void {
    if (this.finished || this.retryRenewal) return
    this.retryRenewal = setTimeout(() => {
      this.retryRenewal = undefined
      void this.renew()
    }, RENEW_RETRY_MS)
  }

  /** The lease clock fires while the store is unreachable: no query needed. */
  private armExpiry(): void {
    clearTimeout(this.expiry)
    if (this.finished) return
    this.expiry = setTimeout(() => this.abort(new RunAborted('CLAIM_EXPIRED')), Math.max(0, this.deadline - performance.now()))
  }

  private stopClock(): void {
    this.finished = true
    clearInterval(this.renewal)
    clearTimeout(this.expiry)
    clearTimeout(this.retryRenewal)
  }

  private async run(): Promise<void> {
    const { job } = this
    let returned = false
    let started = false
    let error: unknown
    try {
      // The start boundary reads the durable state, not only the NOTIFY: a cancel that
      // committed before the start (its hint possibly lost) stops the run before it starts.
      // The claim's own read is that read when nothing is awaited between the claim's result
      // and the start: a read of its own would see one round trip further (a cancel committed
      // during it; a later one reaches the running attempt by its NOTIFY or, that lost, its
      // next renewal, either way) for a statement per job (bench figure 4). Whatever is
      // awaited in between (afterClaim) lets time pass, so the state is read again after it.
      // (Without the hook this still yields once: the handler never runs inside the constructor.)
      const { afterClaim } = this.hooks
      await afterClaim?.({ jobId: job.id, attempt: job.attempt, sessionId: job.sessionId, eventId: job.eventId })
      const start = afterClaim ? await startState(this.host.store.db, job) : startFromClaim(job)
      if (!start.held) this.abort(new RunAborted(start.attempt !== job.attempt ? 'SUPERSEDED_ATTEMPT' : 'FENCED_OUT'))
      else if (start.cancelledBy) this.cancelled(start.cancelledBy)
      const reason = abortReason(this.signal)
      if (!reason?.isCancel && reason?.code !== 'SUPERSEDED_ATTEMPT' && reason?.code !== 'FENCED_OUT') {
        started = true
        await this.consumer.handler(this.context(start.event) as never)
        returned = true
      }
    } catch (thrown) {
      error = thrown
    }
    try {
      // A ctx.effect the handler did not await may be dispatching now, and a call the handler
      // left behind (it threw while the call ran) may still be running: the ending goes out
      // after both, and the lease is renewed meanwhile, so no one takes the run over beside
      // the call (effects.ts, DispatchesInFlight).
      await this.dispatches.close()
      this.stopClock()
      // A first attempt that called no ctx.effect has no effect to reconcile: its settle
      // skips that read (one statement of three per effect-free job; bench figure 4).
      const effectFree = job.attempt === 1 && !this.effectsUsed
      // The outcome is decided from the signal as it stands now: a retry of the ending after
      // an outage must not decide again from a lease clock that fired meanwhile.
      const signal = frozen(this.signal)
      // An ending the outage refuses is sent again until the store answers, within the lease
      // as last renewed (after it, a successor may hold the run): never left to lease expiry.
      const settle = (write: () => Promise<unknown>) =>
        throughOutage(write, { until: this.deadline, giveUp: () => this.claimGone, onOutage: () => this.outageNoticed('its ending') })
      if (this.ended) {
        // Ended with its terminal events by ctx.end, its effects all settled: nothing left to do.
      } else if (started || error !== undefined) {
        await settle(() => settleAttempt(this.host, job, signal, returned, error, { effectFree }))
        // The handler did not end the run itself (it threw, or never ran to its end): the
        // consumer's `onEnded` hook writes what the handler would have (on-ended.ts).
        if (!returned) await callOnEnded(this.host, this.fence, job)
      } else if (abortReason(this.signal)?.isCancel) {
        // Never started: CANCELLING → CANCELLED (or UNKNOWN while a dead attempt's effect cannot be reconciled).
        await settle(() => settleRun(this.host, job.consumer, this.fence, stopped('CANCELLED_BEFORE_START')))
        await callOnEnded(this.host, this.fence, job)
      }
    } catch (settleError) {
      console.error(`[a2] could not settle job ${job.id} attempt ${job.attempt}`, describeError(settleError).message)
    } finally {
      this.stopClock()
    }
  }

  /** The lease is really lost (or the run was forced out): an outage retry stops there. */
  private get claimLost(): boolean {
    return this.claimGone
  }

  private outageLogged = false
  private outageNoticed(what: string): void {
    if (this.outageLogged) return
    this.outageLogged = true
    console.warn(`[a2] store unreachable: job ${this.job.id} attempt ${this.job.attempt} keeps its lease and sends ${what} again`)
  }

  /**
   * A fenced append, sent again through an outage until the store answers or the claim is lost.
   * Each event gets its id before the first try: a try whose answer was lost may have landed,
   * and the next one finds it in the log (or is refused by the unique id, then finds it).
   */
  private async appendThroughOutage(inputs: ValidInput[]): Promise<A2Event[]> {
    const { host, job, fence } = this
    const named = inputs.map((input) => ({ ...input, id: input.id ?? randomUUID() }))
    const landed = () => landedAlready(host.store.db, job.sessionId, named)
    return throughOutage(
      async (tries) => {
        if (tries > 0) {
          const found = await landed()
          if (found) return found
        }
        try {
          return (await host.append(job.sessionId, named, { fence })).events
        } catch (error) {
          // 23505: a copy with these ids is in the log (an earlier try landed, or the caller's own id was used before).
          if (sqlState(error) === '23505') {
            const found = await landed()
            if (found) return found
          }
          throw error
        }
      },
      { giveUp: () => this.claimLost, onOutage: () => this.outageNoticed('its appends') },
    )
  }

  private context(event: A2Event): RunContext<Contract, string> {
    const { host, job, fence, hooks } = this
    const signal = this.signal
    return {
      event: event as never,
      signal,
      attempt: job.attempt,
      jobId: job.id,
      sessionId: job.sessionId,
      // Reads are sent again through an outage like the appends: they change nothing.
      read: (options = {}) => throughOutage(() => read(host.store.db, job.sessionId, options), { giveUp: () => this.claimLost }) as never,
      fold: (reducer, options = {}) =>
        throughOutage(() => foldSession(host.store, job.sessionId, reducer, { before: options.before ?? event.index }), {
          giveUp: () => this.claimLost,
        }),
      append: async (...inputs) => {
        try {
          return (await this.appendThroughOutage(inputs as ValidInput[])) as never
        } catch (error) {
          // A step refused because the run was stopped: the Stop's hint has not reached this
          // attempt (lost, or on its way). Its row says so now: renewing reads it and fires the
          // signal, instead of at the next renewal (a third of the lease: 5 s for the chat).
          if (isA2Error(error, 'run_cancelled') && this.hasAbortOn) void this.renew()
          throw error
        }
      },
      end: async (terminal) => {
        // The ending must see every dispatch this attempt made (effects.ts): none goes out after it.
        await this.dispatches.close()
        const named = (inputs: unknown[]) => (inputs as ValidInput[]).map((input) => ({ ...input, id: input.id ?? randomUUID() }))
        const events = { completed: named(terminal.completed), cancelled: named(terminal.cancelled) }
        const outcome = await throughOutage(() => endWithEvents(host, job, fence, events), {
          giveUp: () => this.claimLost,
          onOutage: () => this.outageNoticed('its ending'),
        })
        if (outcome !== 'UNSETTLED') {
          this.ended = true
          this.stopClock()
        }
        return outcome
      },
      effect: (key, fn, options) => {
        this.effectsUsed = true
        // Until `fn` is entered every statement of the effect is a read or a compare-and-set
        // that a second try finds done: an outage there is waited out like an append's (the
        // call is still not made while the store is away: fail closed). Once `fn` ran, an
        // outage fails the effect as before: its call is never made twice by a retry here.
        let entered = false
        const call: typeof fn = (idempotencyKey, effectSignal) => ((entered = true), fn(idempotencyKey, effectSignal))
        return throughOutage(
          () =>
            runEffect(
              host.store.db,
              {
                fence,
                cancelVersion: job.cancelVersion,
                signal,
                beforeDispatch: hooks.beforeDispatch ? (k) => hooks.beforeDispatch!(fence, k) : undefined,
                reconcile: this.consumer.options.reconcile,
                dispatches: this.dispatches,
              },
              key,
              call,
              options,
            ),
          { giveUp: () => entered || this.claimLost, onOutage: () => this.outageNoticed('its effect’s record') },
        )
      },
    }
  }
}

/** A signal that stays as `signal` is now, whatever happens to it later. */
function frozen(signal: AbortSignal): AbortSignal {
  return signal.aborted ? AbortSignal.abort(signal.reason) : new AbortController().signal
}

interface StartState {
  held: boolean
  attempt: number
  cancelledBy?: EventRef
  event: A2Event
}

/** The start state as the claim returned it: held (the claim just took it ACTIVE at this attempt). */
function startFromClaim(job: ClaimedJob): StartState {
  if (!job.event) throw new Error(`job ${job.id} has no trigger event`)
  return { held: true, attempt: job.attempt, cancelledBy: job.cancelledBy, event: job.event }
}

/** The job's state and its trigger event, read again as the attempt starts. */
async function startState(db: Executor, job: ClaimedJob): Promise<StartState> {
  const [row] = await query<EventRow & { status: RunStatus; attempt: number; cancelled_by: EventRef | null }>(
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
    // A Stop recorded against the run is honoured whatever the status it was recorded in.
    cancelledBy: row.cancelled_by ? { id: row.cancelled_by.id, index: row.cancelled_by.index } : undefined,
    event: eventFromRow(row),
  }
}
