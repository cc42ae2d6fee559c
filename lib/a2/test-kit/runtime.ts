/**
 * Helpers for the consumer-runtime tests: a recorder of what handlers did (with
 * monotonic timestamps), polling waits, the a2_jobs / a2_job_transitions rows of a
 * run, and a store wrapper that can hold or observe statements (an unreachable store
 * on PGlite, a seam for races on both drivers).
 */
import { performance } from 'node:perf_hooks'
import { afterEach } from 'vitest'
import { sql, type SQL } from 'drizzle-orm'
import { PgDialect } from 'drizzle-orm/pg-core'
import type { Store } from '@/lib/a2/server'
import { useTestStore, type TestDb } from './db'
import { query } from '../internal/store/store'

export interface Entry {
  what: string
  at: number
  [key: string]: unknown
}

/** What handlers did, in order, with `performance.now()` timestamps. */
export class Recorder {
  readonly entries: Entry[] = []
  private readonly waiters = new Set<() => void>()

  add(what: string, data: Record<string, unknown> = {}): Entry {
    const entry = { what, at: performance.now(), ...data }
    this.entries.push(entry)
    for (const wake of [...this.waiters]) wake()
    return entry
  }

  all(what: string, where: (e: Entry) => boolean = () => true): Entry[] {
    return this.entries.filter((e) => e.what === what && where(e))
  }

  count(what: string, where?: (e: Entry) => boolean): number {
    return this.all(what, where).length
  }

  /** Resolves with the first matching entry (past or future); rejects after `timeoutMs`. */
  waitFor(what: string, where: (e: Entry) => boolean = () => true, timeoutMs = 10_000): Promise<Entry> {
    const found = this.all(what, where)[0]
    if (found) return Promise.resolve(found)
    return new Promise((resolve, reject) => {
      const check = () => {
        const hit = this.all(what, where)[0]
        if (!hit) return
        clearTimeout(timer)
        this.waiters.delete(check)
        resolve(hit)
      }
      const timer = setTimeout(() => {
        this.waiters.delete(check)
        reject(new Error(`no "${what}" entry within ${timeoutMs} ms; saw ${JSON.stringify(this.entries.map((e) => e.what))}`))
      }, timeoutMs)
      this.waiters.add(check)
    })
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Polls `probe` until it returns a truthy value; rejects with `label` after `timeoutMs`. */
export async function waitUntil<T>(probe: () => Promise<T> | T, label: string, timeoutMs = 10_000, everyMs = 20): Promise<NonNullable<T>> {
  const deadline = performance.now() + timeoutMs
  let last: T | undefined
  for (;;) {
    last = await probe()
    if (last) return last as NonNullable<T>
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${label}`)
    await delay(everyMs)
  }
}

/** A promise with its resolve exposed: a gate a handler waits on and the test opens. */
export interface Gate<T = void> {
  promise: Promise<T>
  open(value: T): void
  opened: boolean
}

export function gate<T = void>(): Gate<T> {
  let open!: (value: T) => void
  const g: Gate<T> = {
    opened: false,
    promise: new Promise<T>((resolve) => (open = resolve)),
    open: (value: T) => {
      g.opened = true
      open(value)
    },
  }
  return g
}

/** Abortable work, shaped like a model call: resolves when `until` settles, rejects with the signal's reason. */
export function abortableWork(signal: AbortSignal, until: Promise<unknown> = new Promise(() => {})): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    until.then(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    })
  })
}

/** Resolves when the signal fires (never rejects). */
export function aborted(signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason)
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }))
}

export interface JobState {
  id: number
  session_id: string
  event_id: string
  event_index: number
  consumer: string
  status: string
  attempt: number
  max_attempts: number
  cancel_version: number
  owner: string | null
  lease_until: Date | string | null
  run_at: Date | string
  lease_lapsed: boolean
  /** run_at <= now() in the database's clock: a scheduled retry (if any) is due. */
  due: boolean
}

export async function jobOf(store: Store, eventId: string, consumerName: string): Promise<JobState | undefined> {
  const [row] = await query<JobState>(
    store.db,
    sql`select id, session_id, event_id, event_index, consumer, status, attempt, max_attempts, cancel_version, owner,
               lease_until, run_at, coalesce(lease_until < now(), false) as lease_lapsed, run_at <= now() as due
        from a2_jobs where event_id = ${eventId} and consumer = ${consumerName}`,
  )
  return row ? { ...row, id: Number(row.id) } : undefined
}

export async function waitForJob(
  store: Store,
  eventId: string,
  consumerName: string,
  until: (job: JobState) => boolean,
  timeoutMs = 10_000,
): Promise<JobState> {
  let last: JobState | undefined
  try {
    return await waitUntil(
      async () => {
        last = await jobOf(store, eventId, consumerName)
        return last && until(last) ? last : undefined
      },
      `job of ${consumerName} for ${eventId}`,
      timeoutMs,
    )
  } catch (error) {
    throw new Error(`${(error as Error).message}; last state ${JSON.stringify(last)}`, { cause: error })
  }
}

export interface TransitionRow {
  attempt: number
  from_status: string | null
  to_status: string
  reason: string
  detail: unknown
  at: Date | string
}

export async function transitionsOf(store: Store, jobId: number): Promise<TransitionRow[]> {
  return query<TransitionRow>(
    store.db,
    sql`select attempt, from_status, to_status, reason, detail, at from a2_job_transitions where job_id = ${jobId} order by id`,
  )
}

/** The compact history of a job: `attempt:FROM>TO:REASON`. */
export async function historyOf(store: Store, jobId: number): Promise<string[]> {
  return (await transitionsOf(store, jobId)).map((t) => `${t.attempt}:${t.from_status ?? '-'}>${t.to_status}:${t.reason}`)
}

export async function eventsOf(store: Store, sessionId: string): Promise<Array<{ index: number; id: string; type: string; payload: any }>> {
  return query(store.db, sql`select index, id, type, payload from a2_events where session_id = ${sessionId} order by index`)
}

/**
 * Settles every open job so the next test's consumers of the same name never pick up a
 * previous test's leftovers. Each test uses its own session, so this only touches what
 * a finished (or failed) test left behind.
 */
export async function quarantineOpenJobs(store: Store): Promise<void> {
  await query(store.db, sql`update a2_jobs set status = 'FAILED', owner = null, lease_until = null where status in ('ACTIVE', 'CANCELLING')`)
}

const dialect = new PgDialect()

export interface Interceptor {
  /** Runs before each statement; a pending promise holds the statement (an unreachable store). */
  before?: (text: string) => Promise<void> | void
  /** Runs after each statement returned (or failed), before its caller sees the outcome. */
  after?: (text: string) => Promise<void> | void
  /** While this returns true, NOTIFY payloads for this store's listeners are dropped (a lost hint). */
  dropNotifications?: () => boolean
  /** Runs after a NOTIFY payload was handed to this store's listeners (they handle it synchronously). */
  notified?: (payload: string) => void
}

/**
 * The same database behind a second Store object whose statements pass through hooks.
 * `db.execute` and `db.transaction` are intercepted — every runtime write (claim, renew,
 * complete, fenced append, effect) goes through one of them. Closing it leaves the
 * underlying store open.
 */
export function interceptStore(store: Store, interceptor: Interceptor): Store {
  const db = new Proxy(store.db, {
    get(target, prop, receiver) {
      if (prop === 'execute') {
        return async (statement: SQL) => {
          const text = dialect.sqlToQuery(statement).sql
          await interceptor.before?.(text)
          try {
            return await target.execute(statement)
          } finally {
            await interceptor.after?.(text)
          }
        }
      }
      if (prop === 'transaction') {
        return async (fn: never, config?: never) => {
          await interceptor.before?.('begin')
          return target.transaction(fn, config)
        }
      }
      const value = Reflect.get(target, prop, receiver)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  return {
    kind: store.kind,
    db,
    listen: (channel, onPayload) =>
      store.listen(channel, (payload) => {
        if (interceptor.dropNotifications?.()) return
        onPayload(payload)
        interceptor.notified?.(payload)
      }),
    close: async () => {},
  }
}

/** A store that can be made unreachable: every statement waits while frozen (PGlite stand-in for the TCP proxy). */
export function freezableStore(store: Store): Store & { freeze(): void; thaw(): void } {
  let held: Gate | undefined
  const wrapped = interceptStore(store, { before: () => held?.promise })
  return {
    ...wrapped,
    freeze() {
      held ??= gate()
    },
    thaw() {
      held?.open()
      held = undefined
    },
  }
}

/**
 * A store whose lease renewals can be held back (a stalled renewal path) while everything
 * else goes through. `hold()` resolves once no renewal is in flight: from then on none can
 * land until `release()`, so a test can let the database's view of a lease end and a
 * successor claim without a late renewal undoing it.
 */
export function holdableRenewals(store: Store): { store: Store; hold(): Promise<void>; release(): void } {
  let held: Gate | undefined
  let inFlight = 0
  const isRenewal = (text: string) => text.startsWith('update a2_jobs set lease_until')
  const wrapped = interceptStore(store, {
    before: async (text) => {
      if (!isRenewal(text)) return
      while (held) await held.promise
      inFlight++
    },
    after: (text) => {
      if (isRenewal(text)) inFlight--
    },
  })
  return {
    store: wrapped,
    async hold() {
      held ??= gate()
      await waitUntil(() => inFlight === 0, 'renewals in flight to land', 5_000, 5)
    },
    release() {
      const g = held
      held = undefined
      g?.open()
    },
  }
}

/** The claim statement of the worker's loop (jobs.ts claimJobs); the drain's statements never name `claimed`. */
export const isClaim = (text: string) => text.includes('claimed as (')

export interface ClaimTicks {
  /** The worker's store: give it to the server whose worker is watched. */
  store: Store
  /** Claim statements sent so far. */
  readonly started: number
  /** Claim statements that returned so far. */
  readonly finished: number
  /**
   * Resolves once the worker has begun `n` more claims from now. A claim begins only after
   * the previous one's jobs were registered as attempts (their `afterClaim` hook called,
   * their attempt number written), so "n more claims began" proves the worker looked at
   * the queue n - 1 times after now and acted on what it found: the condition "nothing
   * more happens" stands for, where a sleep would only hope so.
   */
  more(n?: number, timeoutMs?: number): Promise<void>
}

/** Counts a worker's claim statements (its loop's ticks) through `interceptStore`. */
export function claimTicks(store: Store, interceptor: Interceptor = {}): ClaimTicks {
  let started = 0
  let finished = 0
  const wrapped = interceptStore(store, {
    ...interceptor,
    before: async (text) => {
      if (isClaim(text)) started++
      await interceptor.before?.(text)
    },
    after: async (text) => {
      if (isClaim(text)) finished++
      await interceptor.after?.(text)
    },
  })
  return {
    store: wrapped,
    get started() {
      return started
    },
    get finished() {
      return finished
    },
    async more(n = 2, timeoutMs = 10_000) {
      const target = started + n
      await waitUntil(() => started >= target, `${n} more claim ticks`, timeoutMs, 5)
    },
  }
}

/**
 * A runtime test's world for one describe block: its database, the servers a test starts
 * (their workers stopped after each test), the gates it holds and the cleanups it leaves
 * (run first, so a frozen "dead" worker can be stopped), and the runs a test left open
 * quarantined, so the next test's workers do not pick them up.
 */
export function useRuntimeWorld<S extends { stopWorkers(options: { graceMs: number }): Promise<void> }>(kind: TestDb['kind']) {
  const store = useTestStore(kind)
  const servers: S[] = []
  const gates: Gate[] = []
  const cleanups: Array<() => void> = []
  afterEach(async () => {
    for (const g of gates.splice(0)) g.open()
    for (const cleanup of cleanups.splice(0)) cleanup()
    await Promise.all(servers.splice(0).map((s) => s.stopWorkers({ graceMs: 0 })))
    await quarantineOpenJobs(store())
  })
  const hold = (): Gate => {
    const g = gate()
    gates.push(g)
    return g
  }
  return { store, servers, cleanups, hold }
}
