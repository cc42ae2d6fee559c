/**
 * a2 — the test kit, for tests only (ESLint refuses it in code that ships). What a test of
 * an app built on a2 keeps rewriting: find *its* run (by consumer and trigger event, never
 * "the newest run"), wait for it to reach a status (polling the row, never a sleep), and a
 * model that streams until the run's signal aborts it.
 */
import { and, desc, eq } from 'drizzle-orm'
import { MockLanguageModelV4 } from 'ai/test'
import type { LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { jobs } from './schema'
import type { Store } from './internal/store/store'
import type { RunStatus } from './internal/core/transitions'

export { query } from './internal/store/store'
/** A small contract shaped like a chat's, a store that counts its statements, a poll, a statement interceptor. */
export { testContract } from './test-kit/contract'
export { countingStore } from './test-kit/counting-store'
export { interceptStore, waitUntil, type Interceptor } from './test-kit/runtime'
/** Forgets every folded state this process holds: what it reads next is what a restarted or another instance reads. */
export { forgetFolds } from './internal/log/checkpoints'

/** A run (job) row as the store holds it. */
export type Run = typeof jobs.$inferSelect
/** The one definition of a run's statuses (internal/core/transitions.ts), as the server door exports it too. */
export type { RunStatus } from './internal/core/transitions'

/** Which run: one consumer's job for one trigger event (event ids are unique per session). */
export interface RunKey {
  sessionId: string
  eventId: string
  consumer: string
}

/** The runs of one consumer, newest first; in one session when `sessionId` is given. */
export async function listRuns(store: Store, options: { consumer: string; sessionId?: string; limit?: number }): Promise<Run[]> {
  const byConsumer = eq(jobs.consumer, options.consumer)
  return store.db
    .select()
    .from(jobs)
    .where(options.sessionId === undefined ? byConsumer : and(byConsumer, eq(jobs.sessionId, options.sessionId)))
    .orderBy(desc(jobs.id))
    .limit(options.limit ?? 100)
}

/** The run for `key`, or undefined while its event has not been appended. */
export async function runOf(store: Store, key: RunKey): Promise<Run | undefined> {
  const [run] = await store.db
    .select()
    .from(jobs)
    .where(and(eq(jobs.sessionId, key.sessionId), eq(jobs.eventId, key.eventId), eq(jobs.consumer, key.consumer)))
  return run
}

/**
 * Polls the run for `key` until it is in one of `until` (a status, several, or a predicate);
 * rejects after `timeoutMs` with the last state seen, so a failure says where the run stopped.
 * It polls because nothing announces a run's status: appends NOTIFY, transitions do not, and
 * the run may be on a worker in another process.
 */
export async function waitForRun(
  store: Store,
  key: RunKey,
  until: RunStatus | RunStatus[] | ((run: Run) => boolean),
  options: { timeoutMs?: number; everyMs?: number } = {},
): Promise<Run> {
  const { timeoutMs = 10_000, everyMs = 20 } = options
  const done = typeof until === 'function' ? until : (run: Run) => (Array.isArray(until) ? until : [until]).includes(run.status as RunStatus)
  const deadline = performance.now() + timeoutMs
  let last: Run | undefined
  for (;;) {
    last = await runOf(store, key)
    if (last && done(last)) return last
    if (performance.now() > deadline) {
      throw new Error(
        `run of ${key.consumer} for ${key.eventId} did not reach ${String(until)} within ${timeoutMs} ms; last state ${JSON.stringify(last)}`,
      )
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

/**
 * A language model (the AI SDK provider spec v4) whose stream sends `deltas` and then hangs until the call's
 * abort signal fires, erroring with the signal's reason as a provider's aborted fetch does. For a
 * test about Stop, a lost claim or a shutdown: the run is mid-answer for exactly as long as the
 * test wants. `doStreamCalls` records every call's options.
 */
export function hangingModel(options: { deltas?: string[] } = {}): MockLanguageModelV4 {
  const deltas = options.deltas ?? ['Thinking', ' about', ' it']
  return new MockLanguageModelV4({
    doStream: async ({ abortSignal }) => ({
      stream: new ReadableStream<LanguageModelV4StreamPart>({
        start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] })
          controller.enqueue({ type: 'text-start', id: 'text' })
          for (const delta of deltas) controller.enqueue({ type: 'text-delta', id: 'text', delta })
          if (!abortSignal) return // nothing can abort it: it hangs for good
          const abort = () => controller.error(abortSignal.reason ?? new DOMException('This operation was aborted', 'AbortError'))
          if (abortSignal.aborted) abort()
          else abortSignal.addEventListener('abort', abort, { once: true })
        },
      }),
    }),
  })
}
