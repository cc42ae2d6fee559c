/**
 * Figure 5's server process, started with --expose-gc: the bench HTTP server on a store,
 * serving either the log as SSE (`a2`: one `server.tail()` per connection, through
 * `sseResponse`) or a plain keep-alive endpoint (`plain`, the baseline). The parent opens
 * the connections and asks for memory figures after GC.
 */
import { sql } from 'drizzle-orm'
import { createServer } from '@/lib/a2/server'
import { countingStore } from '@/lib/a2/test-kit/counting-store'
import { chat } from '@/lib/chat/contract'
import { serveParent, tellParent } from './lib/children'
import { openBenchStore } from './lib/db'
import { serveBench, OWNER } from './lib/http'
import { processCpu } from './lib/machine'
import { sleep } from './lib/time'

const [mode = 'a2'] = process.argv.slice(2)
const sessions = Number(process.env.BENCH_SESSIONS ?? 1000)
const url = process.env.BENCH_DB_URL
const gc = (globalThis as { gc?: () => void }).gc
if (!gc) throw new Error('memory-child needs --expose-gc')

// Counts the statements the tails and the bus send (figure 5's idle cost).
const store = countingStore(await openBenchStore(url ? 'postgres' : 'pglite', url))
if (!url) {
  // PGlite is this process's own database: make the sessions here.
  await store.db.execute(sql.raw(`insert into a2_sessions (id, owner) select 'mem-' || g, '${OWNER}' from generate_series(0, ${sessions - 1}) g`))
}
const server = createServer({ contract: chat, consumers: [], store })
// Load the same code in both modes, so the baseline's process starts from the same heap.
await server.read('mem-0', OWNER, { limit: 1 })
const http = await serveBench(mode === 'a2' ? { a2: server } : {})
let cpu = processCpu()

async function settledMemory() {
  for (let i = 0; i < 4; i++) {
    gc!()
    await sleep(50)
  }
  const m = process.memoryUsage()
  const connections = await new Promise<number>((resolve) => http.server.getConnections((_, n) => resolve(n)))
  return {
    rss: m.rss,
    heapUsed: m.heapUsed,
    heapTotal: m.heapTotal,
    external: m.external,
    arrayBuffers: m.arrayBuffers,
    connections,
    subscriptions: await server.subscriptions(),
  }
}

serveParent(
  {
    measure: () => settledMemory(),
    statements: () => store.statements,
    cpu: () => {
      const pct = cpu.stop()
      cpu = processCpu()
      return pct
    },
  },
  async () => {
    await http.close().catch(() => {})
    await store.close().catch(() => {})
  },
)
tellParent({ type: 'ready', url: http.url, pid: process.pid })
