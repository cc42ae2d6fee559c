/**
 * Diagnostic (`npx tsx bench/diagnostics/notify-commit.ts`): what NOTIFY costs a commit.
 *
 * Postgres serializes the commits of every transaction that issued NOTIFY (a database-wide
 * lock taken at pre-commit and held through the commit's WAL flush). a2 NOTIFYs in every
 * append, so chunk appends of unrelated sessions queue behind each other. This times a
 * one-row insert transaction with and without a NOTIFY, alone and from 20 concurrent
 * writers, with a LISTENer connected (as the a2 bus always is).
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
  const once = (notify: boolean, i: number) =>
    client.begin(async (tx) => {
      await tx`insert into notify_probe values (${i})`
      if (notify) await tx`select pg_notify(${JOBS_CHANNEL}, ${encodeHint({ sessionId: 'probe', head: 1 })})`
    })
  for (const notify of [false, true, false, true]) {
    const latencies: number[] = []
    for (let i = 0; i < 200; i++) {
      const t = performance.now()
      await once(notify, i)
      latencies.push(performance.now() - t)
    }
    const s = summarize(latencies)
    console.log(`${notify ? 'insert + NOTIFY' : 'insert         '} alone: p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms`)
  }
  for (const notify of [false, true]) {
    const t = performance.now()
    let n = 0
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        for (let i = 0; i < 60; i++, n++) await once(notify, i)
      }),
    )
    console.log(`${notify ? 'insert + NOTIFY' : 'insert         '} 20 writers: ${Math.round((n * 1000) / (performance.now() - t))} transactions/s`)
  }
  console.log(`(${received} notifications received)`)
} finally {
  await client.end({ timeout: 2 })
  await listener.end({ timeout: 2 })
  await db.drop()
}
