/**
 * Figure 3 — Append throughput: chunk events/s into the log across 50 sessions, each
 * written by the chat's own chunkWriter (group commit, ≤64 deltas per transaction) over
 * the fenced server-side append a consumer's ctx.append makes — the generate consumer's
 * write path, minus the model. 50 producers each offer a delta per millisecond (far
 * more than the store takes, so batches grow as they would under load), with at most 256
 * uncommitted deltas each; the figure is the events committed in a fixed window.
 *
 * Baseline: the same producers and the same chunkWriter over a raw multi-row INSERT into
 * `bench_events`, a table with a2_events' columns, indexes and foreign key, on the same
 * database and pool.
 */
import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { sql } from 'drizzle-orm'
import { consumer, createServer, type Store } from '@/lib/a2/server'
import { chat } from '@/lib/chat/contract'
import { chunkWriter, type ChunkWriter } from '@/lib/chat/answer/chunk-writer'
import { OWNER } from '../lib/http'
import { sleep, until } from '../lib/time'
import { trials, type Trials } from '../lib/stats'

export interface AppendFigure {
  store: 'postgres' | 'pglite'
  ours: Trials
  baseline: Trials
  batch: { ours: number; baseline: number }
  sessions: number
  windowMs: number
}

const SESSIONS = 50
const MAX_UNCOMMITTED = 256

interface Counter {
  committed: number
  batches: number
}

interface Producer {
  pushed: number
  committed: number
}

/** A producer: a delta per ms, at most MAX_UNCOMMITTED not yet committed, until `stopAt`. */
async function produce(writer: ChunkWriter, producer: Producer, stopAt: number) {
  while (performance.now() < stopAt) {
    if (producer.pushed - producer.committed < MAX_UNCOMMITTED) writer.add(`d${producer.pushed++} `)
    await sleep(1)
  }
}

export async function appendFigure(store: Store, options: { windowMs: number; trials: number }): Promise<AppendFigure> {
  // a2_events' columns, defaults, primary key and unique index; LIKE leaves out foreign keys, so add it.
  await store.db.execute(
    sql.raw(`create table if not exists bench_events (like a2_events including defaults including constraints including indexes)`),
  )
  await store.db.execute(sql.raw(`alter table bench_events drop constraint if exists bench_events_session_fk`))
  await store.db.execute(
    sql.raw(`alter table bench_events add constraint bench_events_session_fk foreign key (session_id) references a2_sessions(id) on delete cascade`),
  )

  // Ours: the `bench-append` consumer answers each `generate` by writing chunks, like generate does.
  let release!: () => void
  let barrier = new Promise<void>((resolve) => (release = resolve))
  let started = 0
  let stopAt = 0
  const ourCounter: Counter = { committed: 0, batches: 0 }
  const writers = consumer({ contract: chat, name: 'bench-append', types: ['generate'] }).run(async (ctx) => {
    const of = ctx.event.id
    const local: Producer = { pushed: 0, committed: 0 }
    const writer = chunkWriter(async (deltas) => {
      await ctx.append(...deltas.map((delta) => ({ type: 'chunk' as const, payload: { of, attempt: ctx.attempt, delta } })))
      local.committed += deltas.length
      if (performance.now() <= stopAt) {
        ourCounter.committed += deltas.length
        ourCounter.batches++
      }
    })
    started++
    await barrier
    await produce(writer, local, stopAt)
    await writer.flush()
  })
  const server = createServer({ contract: chat, consumers: [writers], store })
  await server.startWorker({ concurrency: 64, pollMs: 100 })

  const ours: number[] = []
  const base: number[] = []
  const batchOurs: number[] = []
  const batchBase: number[] = []
  try {
    for (let t = 0; t < options.trials; t++) {
      // Ours.
      started = 0
      ourCounter.committed = 0
      ourCounter.batches = 0
      barrier = new Promise<void>((resolve) => (release = resolve))
      const sessions = await makeSessions(store, SESSIONS)
      await Promise.all(
        sessions.map((id) =>
          server.append(id, { id: 'm', type: 'message', payload: { text: 'append bench' } }, { id: 'g', type: 'generate', payload: { for: 'm' } }),
        ),
      )
      await until(() => started === SESSIONS, 30_000, 'append writers to start')
      const t0 = performance.now()
      stopAt = t0 + options.windowMs
      release()
      await sleep(options.windowMs)
      await until(async () => (await openJobs(store)) === 0, 30_000, 'append writers to finish')
      ours.push((ourCounter.committed * 1000) / options.windowMs)
      batchOurs.push(ourCounter.committed / Math.max(1, ourCounter.batches))

      // Baseline: raw multi-row INSERTs through the same chunkWriter.
      const baseSessions = await makeSessions(store, SESSIONS)
      const baseCounter: Counter = { committed: 0, batches: 0 }
      const b0 = performance.now()
      const baseStop = b0 + options.windowMs
      await Promise.all(
        baseSessions.map(async (sessionId) => {
          let next = 0
          const local: Producer = { pushed: 0, committed: 0 }
          const writer = chunkWriter(async (deltas) => {
            const values = deltas.map((delta) => {
              const payload = JSON.stringify({ of: 'g', attempt: 1, delta })
              return sql`(${sessionId}, ${next++}, ${randomUUID()}, 'chunk', ${payload}::jsonb)`
            })
            await store.db.execute(sql`insert into bench_events (session_id, index, id, type, payload) values ${sql.join(values, sql`, `)}`)
            local.committed += deltas.length
            if (performance.now() <= baseStop) {
              baseCounter.committed += deltas.length
              baseCounter.batches++
            }
          })
          await produce(writer, local, baseStop)
          await writer.flush()
        }),
      )
      base.push((baseCounter.committed * 1000) / options.windowMs)
      batchBase.push(baseCounter.committed / Math.max(1, baseCounter.batches))
    }
  } finally {
    await server.stopWorkers({ graceMs: 1000 })
  }
  return {
    store: store.kind,
    ours: trials(ours),
    baseline: trials(base),
    batch: { ours: trials(batchOurs).median, baseline: trials(batchBase).median },
    sessions: SESSIONS,
    windowMs: options.windowMs,
  }
}

async function makeSessions(store: Store, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, () => randomUUID())
  await store.db.execute(
    sql`insert into a2_sessions (id, owner) values ${sql.join(
      ids.map((id) => sql`(${id}, ${OWNER})`),
      sql`, `,
    )}`,
  )
  return ids
}

async function openJobs(store: Store): Promise<number> {
  const result = (await store.db.execute(
    sql`select count(*)::int as n from a2_jobs where consumer = 'bench-append' and status in ('ACTIVE', 'CANCELLING')`,
  )) as unknown
  const rows = Array.isArray(result) ? result : (result as { rows: Array<{ n: number }> }).rows
  return Number(rows[0].n)
}
