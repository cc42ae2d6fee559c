/**
 * The interleaving suite's model of effect calls (interleavings.test.ts): which calls may still
 * be running, and the invariant about them (13):
 *
 *   an effect whose call may still be running is never INTENT, FAILED or "not done"
 *   (EFFECT_RECONCILED_NOT_DONE) under a terminal run, and is never dispatched twice at once
 *   unless it is overlapSafe.
 *
 * A call "may still be running" from the moment its `fn` is entered until `fn` returns or
 * throws — unless the library has its proof that it stopped: the process died with it (a
 * `kill -9`), or its lease lapsed (the owner's own clock aborted it, lib/a2/README.md §9). A
 * handler that ignores its signal and throws, or is forced out, leaves its call running
 * without either proof: that is what the invariant is about.
 */
import { sql } from 'drizzle-orm'
import { query, type Executor } from '../../internal/store/store'

interface Call {
  worker: number
  attempt: number
  overlapSafe: boolean
  /** The library's proof that it stopped (a kill, a lapsed lease); the harness's call may still park. */
  proven: boolean
}

export class CallsInFlight {
  private readonly running = new Map<string, Call[]>()

  /** `fn` entered: a violation when another call of this key may still run and the effect is not overlapSafe. */
  enter(idempotencyKey: string, call: Omit<Call, 'proven'>): string | undefined {
    const others = this.mayRun(idempotencyKey)
    const list = this.running.get(idempotencyKey) ?? []
    list.push({ ...call, proven: false })
    this.running.set(idempotencyKey, list)
    if (others.length > 0 && !call.overlapSafe) {
      return `13: effect ${idempotencyKey} dispatched by attempt ${call.attempt} while attempt ${others[0].attempt}'s call may still run`
    }
    return undefined
  }

  /** `fn` returned or threw. */
  leave(idempotencyKey: string, attempt: number): void {
    const list = this.running.get(idempotencyKey) ?? []
    const i = list.findIndex((c) => c.attempt === attempt)
    if (i >= 0) list.splice(i, 1)
  }

  /** Every call of `worker` stopped as far as the library can know: the process died, or its leases lapsed. */
  proveStopped(worker: number): void {
    for (const list of this.running.values()) for (const call of list) if (call.worker === worker) call.proven = true
  }

  mayRun(idempotencyKey: string): Call[] {
    return (this.running.get(idempotencyKey) ?? []).filter((c) => !c.proven)
  }

  get anyMayRun(): boolean {
    return [...this.running.keys()].some((key) => this.mayRun(key).length > 0)
  }
}

/**
 * Invariant 13 against the database after a step, for the consumer's jobs. Returns the
 * violations and the states it saw (for the suite's counts of what a seed reaches).
 */
export async function checkCallsInFlight(
  db: Executor,
  consumer: string,
  calls: CallsInFlight,
  sinceTransition: number,
): Promise<{ violations: string[]; seen: string[] }> {
  const violations: string[] = []
  const seen: string[] = []
  if (!calls.anyMayRun) return { violations, seen }
  const effects = await query<{ job_id: number; key: string; effect: string; run: string; forced: boolean }>(
    db,
    sql`select e.job_id, e.key, e.status as effect, j.status as run,
               exists (select 1 from a2_job_transitions t where t.job_id = j.id and t.reason = 'FORCED_AFTER_GRACE') as forced
        from a2_effects e join a2_jobs j on j.id = e.job_id where j.consumer = ${consumer}`,
  )
  for (const e of effects) {
    const key = `a2-${Number(e.job_id)}-${e.key}`
    if (calls.mayRun(key).length === 0) continue
    const terminal = ['COMPLETED', 'CANCELLED', 'FAILED'].includes(e.run)
    seen.push(`call in flight under a ${e.run} run${e.forced ? ' (forced out)' : ''}`)
    if (terminal && (e.effect === 'INTENT' || e.effect === 'FAILED')) {
      violations.push(`13: job ${Number(e.job_id)} is ${e.run} with effect ${e.key} ${e.effect} while its call may still run`)
    }
  }
  const notDone = await query<{ job_id: number; key: string }>(
    db,
    sql`select t.job_id, t.detail ->> 'key' as key from a2_job_transitions t join a2_jobs j on j.id = t.job_id
        where j.consumer = ${consumer} and t.id > ${sinceTransition} and t.reason = 'EFFECT_RECONCILED_NOT_DONE'`,
  )
  for (const row of notDone) {
    if (calls.mayRun(`a2-${Number(row.job_id)}-${row.key}`).length > 0) {
      violations.push(`13: job ${Number(row.job_id)}'s effect ${row.key} was reconciled "not done" while its call may still run`)
    }
  }
  return { violations, seen }
}
