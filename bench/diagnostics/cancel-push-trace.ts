/**
 * Diagnostic (`npx tsx bench/diagnostics/cancel-push-trace.ts`): where a Stop push spends
 * its time while the answer is streaming. Runs the chat rig (worker on another process),
 * and traces each statement of the `cancelled` push as postgres-js sends it: the gap
 * before the statement after `select … for update` is the wait for the session's row
 * lock, held by the worker's in-flight chunk append.
 */
import postgres from 'postgres'
import { drizzle } from 'drizzle-orm/postgres-js'
import { performance } from 'node:perf_hooks'
import type { Db, Store } from '@/lib/a2/server'
import { createBenchDb } from '../lib/db'
import { openChatRig } from '../lib/rig'
import { OWNER } from '../lib/http'
import { prompt } from '../lib/upstream'
import { until, sleep } from '../lib/time'
import { killChildren } from '../lib/children'

const db = await createBenchDb()
const trace: Array<{ at: number; statement: string }> = []
let tracing = false
const client = postgres(db.url, {
  max: 10,
  onnotice: () => {},
  debug: (_connection: number, statement: string) => {
    if (tracing) trace.push({ at: performance.now(), statement: statement.replace(/\s+/g, ' ').slice(0, 72) })
  },
})
const store: Store = {
  kind: 'postgres',
  db: drizzle(client) as unknown as Db,
  async listen(channel, onPayload) {
    const request = await client.listen(channel, onPayload)
    return () => request.unlisten()
  },
  close: () => client.end({ timeout: 2 }),
}
const rig = await openChatRig({ kind: 'postgres', store, dbUrl: db.url, tokenMs: 20 })
try {
  for (let i = 0; i < 8; i++) {
    const tag = `trace${i}`
    const { id } = await rig.chat.sessions.create(OWNER)
    await rig.chat.push(id, OWNER, {
      events: [
        { id: 'm', type: 'message', payload: { text: prompt(tag, 5_000) } },
        { id: 'g', type: 'generate', payload: { for: 'm' } },
      ],
    })
    const request = await rig.byTag.wait(tag)
    await until(() => request.tokensSent >= 3, 10_000, 'tokens')
    trace.length = 0
    tracing = true
    const t0 = performance.now()
    await rig.chat.push(id, OWNER, { id: 'c', type: 'cancelled', payload: { of: 'g', lastSeenIndex: 1 } })
    const t1 = performance.now()
    tracing = false
    await request.closed
    console.log(`cancel push ${(t1 - t0).toFixed(1)} ms; upstream closed ${(request.closedAt! - t1).toFixed(1)} ms after it resolved`)
    for (const e of trace) console.log(`  +${(e.at - t0).toFixed(1).padStart(5)} ms  ${e.statement}`)
    await sleep(100)
  }
} finally {
  await rig.close()
  killChildren()
  await store.close()
  await db.drop()
}
