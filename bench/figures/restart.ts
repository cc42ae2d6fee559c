/**
 * Figure 10 — Postgres restarts (issue 31): how soon each answer in flight streams again
 * after the store answers again, for a fast restart (`pg_ctl restart -m fast`, ~0.5 s down)
 * and an immediate one (`pg_ctl stop -m immediate`, a start 3 s later).
 *
 * A Postgres cluster of the figure's own (test/pg-cluster.ts: a restart of the shared server
 * would hit everything else on the machine), the chat's a2 server with its worker in this
 * process on one store and the reads on another (as an app and a worker would be), the test
 * upstream streaming long answers. Each sample: `answers` answers streaming; a restart; the
 * store's first answer to a fresh connection (polled every 10 ms) is "back"; for each answer,
 * the first chunk committed after that (its created_at, the database's clock on the same
 * machine) minus "back". Then the record is checked: every run still at attempt 1, none FAILED.
 *
 * Baseline: the chat's lease (15 s), what an answer waited for before (the run stayed ACTIVE
 * under a live owner until its lease lapsed; the issue measured 11.7–17.4 s, median 14.2 s).
 * The mechanism's bound, as figure 7's, not a second measurement.
 */
import { sql } from 'drizzle-orm'
import { openPostgresStore, type Store } from '@/lib/a2/server'
import { migrateDatabase } from '@/lib/store/migrate'
import { buildChatServer } from '@/lib/chat/server/chat-server'
import { startUpstream } from '@/scripts/upstream-server'
import { startCluster, type Cluster } from '@/test/pg-cluster'
import { rows } from '../lib/db'
import { until } from '../lib/time'
import { summarize, type Summary } from '../lib/stats'

/** lib/chat/answer/generate.ts's lease: what an answer waited for before (issue 31). */
export const RESTART_BASELINE_MS = 15_000

export interface RestartPart {
  mode: 'fast' | 'immediate'
  /** store back → each answer's next chunk committed (ms), over every restart and answer */
  back: Summary
  /** how long the store was down, per restart (ms) */
  down: Summary
  restarts: number
  errors: string[]
}

export interface RestartFigure {
  leaseMs: number
  answers: number
  fast?: RestartPart
  immediate?: RestartPart
  /** runs whose attempt moved past 1, and runs FAILED, at the end (both must be 0) */
  attemptsSpent: number
  failed: number
}

export async function restartFigure(options: {
  restarts: number
  answers: number
  tokenMs: number
  deadline: number
  say?: (line: string) => void
}): Promise<RestartFigure> {
  const say = options.say ?? (() => {})
  const cluster: Cluster = await startCluster()
  const upstream = await startUpstream({ tokenMs: options.tokenMs, tokens: 1_000_000 })
  let appStore: Store | undefined
  let workerStore: Store | undefined
  try {
    appStore = await openPostgresStore(cluster.url)
    await migrateDatabase(appStore)
    workerStore = await openPostgresStore(cluster.url)
    const model = { OPENAI_API_KEY: 'bench', OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'bench' }
    const app = buildChatServer(appStore, model).server
    const worker = buildChatServer(workerStore, model).server
    await worker.startWorker({ pollMs: 100 })
    const sessions: string[] = []
    for (let i = 0; i < options.answers; i++) {
      const { id } = await app.sessions.create('bench')
      await app.push(id, 'bench', {
        events: [
          { id: 'm1', type: 'message', payload: { text: `Tell me a long story ${i}` } },
          { id: 'g1', type: 'generate', payload: { for: 'm1' } },
        ],
      })
      sessions.push(id)
    }
    const store = appStore
    const firstChunkAfter = async (id: string, wall: number) =>
      (
        await rows<{ at: number }>(
          store,
          sql`select (extract(epoch from created_at) * 1000)::float8 as at from a2_events
              where session_id = ${id} and type = 'chunk' and created_at >= to_timestamp(${wall / 1000})
              order by index limit 1`,
        ).catch(() => [])
      )[0]?.at
    // Every answer streaming before the first restart.
    await until(
      async () => (await Promise.all(sessions.map((id) => firstChunkAfter(id, 0)))).every((at) => at !== undefined),
      20_000,
      'answers streaming',
    )

    const part = async (mode: RestartPart['mode']): Promise<RestartPart> => {
      const back: number[] = []
      const down: number[] = []
      const errors: string[] = []
      let restarts = 0
      for (let r = 0; r < options.restarts && Date.now() < options.deadline; r++) {
        const { downAt, answeredAt } = mode === 'fast' ? await cluster.restartFast() : await cluster.crashAndStart(3_000)
        down.push(answeredAt - downAt)
        restarts++
        for (const id of sessions) {
          let at: number | undefined
          try {
            await until(async () => (at = await firstChunkAfter(id, answeredAt)) !== undefined, 20_000, `answer ${id} back`, 10)
            back.push(at! - answeredAt)
          } catch (error) {
            errors.push(`${mode} restart ${r + 1}: ${(error as Error).message}`)
          }
        }
        say(`10 ${mode} restart ${r + 1}: down ${down.at(-1)} ms, back p50 ${summarize(back.slice(-sessions.length)).p50.toFixed(0)} ms`)
      }
      return { mode, back: summarize(back), down: summarize(down), restarts, errors }
    }
    const fast = await part('fast')
    const immediate = await part('immediate')
    const [record] = await rows<{ spent: number; failed: number }>(
      store,
      sql`select count(*) filter (where attempt > 1)::int as spent, count(*) filter (where status = 'FAILED')::int as failed
          from a2_jobs where consumer = 'generate'`,
    )
    await worker.stopWorkers()
    return { leaseMs: RESTART_BASELINE_MS, answers: options.answers, fast, immediate, attemptsSpent: record.spent, failed: record.failed }
  } finally {
    await Promise.allSettled([appStore?.close(), workerStore?.close()])
    await upstream.close()
    await cluster.destroy()
  }
}
