/**
 * The operator's view of runs: jobs with status, attempts, cancel version, transition
 * history and effects; and the one manual action, settling an UNKNOWN effect.
 */
import { desc, eq, sql, asc } from 'drizzle-orm'
import { effects, jobTransitions, jobs, type EffectRow, type JobRow, type JobTransitionRow } from '../../schema'
import { A2Error } from '../core/errors'
import { query, type Store } from '../store/store'
import { resolveUnknownRun } from './end-runs'
import type { RunStatus } from '../core/transitions'

/** `server.operator`: every user's runs, and the verdict on an UNKNOWN effect. */
export interface A2Operator {
  /** Runs, newest first: of some sessions, or of every session an owner holds. */
  listRuns(options?: { sessionIds?: string[]; owner?: string; limit?: number }): Promise<JobRow[]>
  /** A run with its history and effects; with `owner`, only if that owner holds its session. */
  runDetail(jobId: number, owner?: string): Promise<{ job: JobRow; history: JobTransitionRow[]; effects: EffectRow[] }>
  /** Settles an UNKNOWN effect: done (with the result) or not done; the run's status after, when it settled. */
  resolveEffect(jobId: number, key: string, verdict: { done: boolean; result?: unknown }, by: string): Promise<{ status: RunStatus | undefined }>
}

export function operator(store: Store): A2Operator {
  const db = store.db
  return {
    /** Runs, newest first: of some sessions, or of every session an owner holds. */
    async listRuns(options: { sessionIds?: string[]; owner?: string; limit?: number } = {}) {
      const where = options.sessionIds
        ? sql`${jobs.sessionId} in (select jsonb_array_elements_text(${JSON.stringify(options.sessionIds)}::jsonb))` // one statement shape for any number of ids
        : options.owner !== undefined
          ? sql`${jobs.sessionId} in (select id from a2_sessions where owner = ${options.owner})`
          : undefined
      return db
        .select()
        .from(jobs)
        .where(where)
        .orderBy(desc(jobs.id))
        .limit(Math.min(options.limit ?? 100, 500))
    },

    /** A run with its history and effects; with `owner`, only if that owner holds its session. */
    async runDetail(jobId: number, owner?: string) {
      const [job] = await db.select().from(jobs).where(eq(jobs.id, jobId))
      if (!job) throw new A2Error('not_found', 'no such run')
      if (owner !== undefined) {
        const [holder] = await query<{ owner: string }>(db, sql`select owner from a2_sessions where id = ${job.sessionId}`)
        // Someone else's run answers like a missing one: no existence oracle.
        if (holder?.owner !== owner) throw new A2Error('not_found', 'no such run')
      }
      const history = await db.select().from(jobTransitions).where(eq(jobTransitions.jobId, jobId)).orderBy(asc(jobTransitions.id))
      const effectRows = await db.select().from(effects).where(eq(effects.jobId, jobId)).orderBy(asc(effects.createdAt))
      return { job, history, effects: effectRows }
    },

    /**
     * An operator decides an UNKNOWN effect: done (with what they know of the result) or not
     * done. When no effect of the run stays UNKNOWN the run settles: a run that was being
     * cancelled becomes CANCELLED; otherwise it becomes ACTIVE again so a new attempt
     * replays the recorded result (done) or dispatches again under the same key (not done).
     */
    async resolveEffect(jobId: number, key: string, verdict: { done: boolean; result?: unknown }, by: string) {
      return db.transaction(async (tx) => {
        // The run's row first, the order resolveUnknownRun locks in: otherwise this verdict holds
        // its effect's row while a late outcome's settle holds the run's and waits for that
        // effect's (a deadlock; unknown-settle.test.ts, on Postgres).
        await query(tx, sql`select id from a2_jobs where id = ${jobId} for update`)
        const updated = await query(
          tx,
          sql`update a2_effects set status = ${verdict.done ? 'DONE' : 'INTENT'},
                  result = ${JSON.stringify(verdict.done ? { value: verdict.result ?? null } : null)}::jsonb, updated_at = now()
              where job_id = ${jobId} and key = ${key} and status = 'UNKNOWN' returning job_id`,
        )
        if (updated.length !== 1) throw new A2Error('conflict', 'that effect is not UNKNOWN')
        const status = await resolveUnknownRun(tx, jobId, 'OPERATOR_RESOLVED', { key, verdict, by })
        return { status }
      })
    },
  }
}
