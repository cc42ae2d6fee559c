/**
 * The library's one group committer: requests that arrive while a statement is in flight wait
 * and go together in the next one, each answered with its own outcome. Two statements use it —
 * step batches (log/batched-appends.ts) and run endings (runtime/end-runs.ts) — because a
 * statement, its commit and its WAL flush cost about the same for one request as for sixty:
 * chunk commits and run endings one statement each were what tokens and jobs queued behind
 * (bench figures 2 and 4, whose comments give the numbers).
 *
 * Nothing waits on a timer. Idle, a request goes at once (or at the end of its event-loop turn,
 * with `gatherTurn`); requests only gather while the database is busy with the statements before.
 */
import { sqlState } from './store'

/** What one request of a batch came to: its value, or the error its caller gets. */
export type Outcome<T> = { value: T } | { error: unknown }

export interface GroupCommitOptions<R, T> {
  /** Statements in flight at once. */
  maxInFlight: number
  /**
   * Wait for the end of the event-loop turn before sending, so the requests one turn makes go
   * together: a claim's attempts end in the same turn, and on PGlite a statement runs on this
   * very loop, so a batch sent at once would always be alone.
   */
  gatherTurn: boolean
  /** The waiting requests the next statement takes (at least the first), and those left for later, in order. */
  take(waiting: readonly R[]): { batch: R[]; rest: R[] }
  /** One statement for the batch: an outcome per request, in order. A throw means the statement as a whole failed. */
  send(batch: readonly R[]): Promise<Array<Outcome<T>>>
}

interface Pending<R, T> {
  request: R
  resolve(value: T): void
  reject(error: unknown): void
}

export class GroupCommit<R, T> {
  private waiting: Array<Pending<R, T>> = []
  private inFlight = 0
  private scheduled = false

  constructor(private readonly options: GroupCommitOptions<R, T>) {}

  submit(request: R): Promise<T> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ request, resolve, reject })
      this.schedule()
    })
  }

  private schedule(): void {
    if (!this.options.gatherTurn) return this.pump()
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      this.pump()
    })
  }

  private pump(): void {
    while (this.inFlight < this.options.maxInFlight && this.waiting.length > 0) {
      const taken = this.take()
      this.inFlight++
      void this.commit(taken).finally(() => {
        this.inFlight--
        this.schedule()
      })
    }
  }

  private take(): Array<Pending<R, T>> {
    const byRequest = new Map(this.waiting.map((p) => [p.request, p]))
    const { batch, rest } = this.options.take(this.waiting.map((p) => p.request))
    this.waiting = rest.map((r) => byRequest.get(r)!)
    return batch.map((r) => byRequest.get(r)!)
  }

  private async commit(batch: Array<Pending<R, T>>): Promise<void> {
    let outcomes: Array<Outcome<T>>
    try {
      outcomes = await this.options.send(batch.map((p) => p.request))
    } catch (error) {
      // The database refused the statement, so it rolled back whole: nothing was written. Each
      // request goes again alone, so an error belongs to the request that caused it (or a
      // deadlock against a statement holding some of the batch's rows passes) and the others
      // land. Any other failure (a lost connection) may have committed and is never repeated:
      // every request gets the error, as it would have from its own statement.
      if (batch.length > 1 && rolledBack(error)) await Promise.all(batch.map((p) => this.commit([p])))
      else for (const p of batch) p.reject(error)
      return
    }
    batch.forEach((p, i) => {
      const outcome = outcomes[i]
      if ('error' in outcome) p.reject(outcome.error)
      else p.resolve(outcome.value)
    })
  }
}

/**
 * The database answered ERROR (not FATAL: a dying connection may have committed), so the
 * statement rolled back. drizzle wraps the driver's error, so its causes are looked at too.
 */
function rolledBack(error: unknown): boolean {
  if (sqlState(error) === '40P01') return true // deadlock_detected: rolled back, whatever the driver calls its severity
  for (let e = error as { severity?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 3; e = e.cause as typeof e, depth++) {
    if (e.severity === 'ERROR') return true
  }
  return false
}
