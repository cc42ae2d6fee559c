/**
 * Diagnostic (`npx tsx bench/diagnostics/notify-commit.ts`): what NOTIFY costs a commit.
 *
 * Postgres serializes the commits of every transaction that issued NOTIFY (a database-wide
 * lock taken at pre-commit and held through the commit's WAL flush). a2 NOTIFYs in every
 * append, so chunk appends of unrelated sessions queue behind each other. This times a
 * one-row insert transaction with and without a NOTIFY, alone and from 20 concurrent
 * writers, with a LISTENer connected (as the a2 bus always is), and with the NOTIFY sent after
 * the commit in a transaction of its own with synchronous_commit off. 2026-12-01, 20 writers,
 * load ~7.5: 1,320–1,475 writes/s (p50 12 ms) notifying inside, 1,975–2,125 (p50 8–9 ms)
 * notifying after, 2,460 (6.2 ms) without. Tried in a2 (hints kept by the writing statement,
 * sent by the appending process after its commit, one hint statement in flight per store)
 * and not kept: the hint's extra round trip came after every commit, and bench figures 1, 2
 * and 6 got slower in three alternated pairs (Stop p50 1.6–1.9 → 3.8–4.3 ms, token p50 at 100
 * streams 91–134 → 213–305 ms) — with a2's own few notifying writers per process the lock's
 * queue is short, and the hint's wait for a connection and its round trip are not.
 */
import postgres from 'postgres'
import { encodeHint, JOBS_CHANNEL } from '@/lib/a2/internal/wire'
import { createBenchDb } from '../lib/db'
import { summarize } from '../lib/stats'

const db = await createBenchDb()
const client = postgres(db.url, { max: 10, onnotice: () => {} })
const listener = postgres(db.url, { max: 1, onnotice: () => {} })
try {
  await client`create table notify_probe (x int)`
  let received = 0
  await listener.listen(JOBS_CHANNEL, () => received++)
  const hint = encodeHint({ sessionId: 'probe', head: 1 })
  type Mode = 'insert' | 'inside' | 'after'
  // inside: the NOTIFY in the writing transaction (a2 before migration 0009); after: the
  // write commits, then a transaction of its own NOTIFYs with synchronous_commit off (a2_send_hints).
  const once = async (mode: Mode, i: number) => {
    await client.begin(async (tx) => {
      await tx`insert into notify_probe values (${i})`
      if (mode === 'inside') await tx`select pg_notify(${JOBS_CHANNEL}, ${hint})`
    })
    if (mode === 'after') await client`select set_config('synchronous_commit', 'off', true), pg_notify(${JOBS_CHANNEL}, ${hint})`
  }
  const label = { insert: 'insert                  ', inside: 'insert + NOTIFY inside  ', after: 'insert, then NOTIFY     ' }
  for (const mode of ['insert', 'inside', 'after', 'insert', 'inside', 'after'] as const) {
    const latencies: number[] = []
    for (let i = 0; i < 200; i++) {
      const t = performance.now()
      await once(mode, i)
      latencies.push(performance.now() - t)
    }
    const s = summarize(latencies)
    console.log(`${label[mode]} alone: p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms`)
  }
  for (const mode of ['insert', 'inside', 'after', 'insert', 'inside', 'after'] as const) {
    const t = performance.now()
    const latencies: number[] = []
    let n = 0
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        for (let i = 0; i < 60; i++, n++) {
          const began = performance.now()
          await once(mode, i)
          latencies.push(performance.now() - began)
        }
      }),
    )
    const s = summarize(latencies)
    console.log(
      `${label[mode]} 20 writers: ${Math.round((n * 1000) / (performance.now() - t))} writes/s, p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms`,
    )
  }
  console.log(`(${received} notifications received)`)
} finally {
  await client.end({ timeout: 2 })
  await listener.end({ timeout: 2 })
  await db.drop()
}
