/**
 * A worker on another process, as `npm run worker` runs it: opens a Postgres store on the
 * bench database and starts a worker.
 *
 *   chat  buildChatServer(store, { OPENAI_API_KEY: 'bench', OPENAI_BASE_URL: <upstream> },
 *         <webhook>) and the real `generate` consumer (figures 1, 2, 6, 11, 12)
 *         On SIGTERM it hands its runs over at once, as `npm run worker` does (figure 7).
 *   wake  the no-op consumer; reports when each run starts (figure 4, append → run start),
 *         plus a bare LISTEN + SKIP LOCKED claimer on `bench_jobs` (its baseline)
 *
 * Driven by the parent over IPC (bench/lib/children.ts); exits when the parent goes away.
 */
import { sql } from 'drizzle-orm'
import { openPostgresStore, createServer, type Store } from '@/lib/a2/server'
import { buildChatServer } from '@/lib/chat/server/chat-server'
import { openMcpTools } from '@/lib/chat/tools/mcp'
import type { McpServers } from '@/lib/mcp/config'
import { serveParent, tellParent } from './lib/children'
import { wallNow } from './lib/time'
import { bareClaim, benchContract, noopConsumers } from './lib/wake-contract'
import { cpuSampler } from './lib/machine'

const [mode = 'chat'] = process.argv.slice(2)
const url = process.env.BENCH_DB_URL
if (!url) throw new Error('worker-child needs BENCH_DB_URL')
const concurrency = Number(process.env.BENCH_WORKER_CONCURRENCY ?? 64)

// BENCH_WORKER_POOL: try another pool size (experiments only; the figures use the library default).
const pool = process.env.BENCH_WORKER_POOL ? Number(process.env.BENCH_WORKER_POOL) : undefined
const store: Store = await openPostgresStore(url, { max: pool })
let stopWorkers: () => Promise<void> = async () => {}
let bare: { end(): Promise<void> } | undefined

if (mode === 'chat') {
  const upstreamUrl = process.env.BENCH_UPSTREAM_URL
  if (!upstreamUrl) throw new Error('chat mode needs BENCH_UPSTREAM_URL')
  // The parent's MCP servers (figure 11), as A2_MCP_SERVERS would give them.
  const mcp = process.env.BENCH_MCP_SERVERS ? await openMcpTools(JSON.parse(process.env.BENCH_MCP_SERVERS) as McpServers) : undefined
  const { server } = buildChatServer(
    store,
    { OPENAI_API_KEY: 'bench', OPENAI_BASE_URL: upstreamUrl, OPENAI_MODEL: 'bench' },
    // '' (none) when the parent configured no webhook: unset would fall back to A2_WEBHOOK_URL.
    process.env.BENCH_WEBHOOK_URL ?? '',
    mcp,
  )
  await server.startWorker({ concurrency })
  stopWorkers = () => server.stopWorkers({ graceMs: 500 })
  // SIGTERM as `npm run worker` handles it (lib/chat/server/process.ts → shutdownChatServer): stop
  // claiming and hand every running attempt over at once (no grace), close the store, exit.
  // Figure 7 measures how soon the answer continues on another worker.
  process.once('SIGTERM', () => {
    setTimeout(() => process.exit(1), 15_000).unref()
    void server
      .stopWorkers()
      .catch(() => {})
      .then(() => store.close().catch(() => {}))
      .finally(() => process.exit(0))
  })
} else if (mode === 'wake') {
  const server = createServer({
    contract: benchContract,
    consumers: noopConsumers((n) => tellParent({ type: 'started', n, at: wallNow() })),
    store,
  })
  await server.startWorker({ concurrency })
  stopWorkers = () => server.stopWorkers({ graceMs: 500 })
  bare = await bareClaimer(url)
} else {
  throw new Error(`unknown mode ${mode}`)
}

/** The wake-up baseline: LISTEN on its own channel; each notification claims with one SKIP LOCKED statement. */
async function bareClaimer(databaseUrl: string) {
  const { default: postgres } = await import('postgres')
  const client = postgres(databaseUrl, { max: 2, onnotice: () => {} })
  const owner = `bare-${process.pid}`
  let claiming = false
  let again = false
  const claim = async () => {
    if (claiming) return void (again = true)
    claiming = true
    try {
      do {
        again = false
        const rows = await client.unsafe(bareClaim(16, owner))
        const at = wallNow()
        for (const row of rows) tellParent({ type: 'bare-started', n: Number(row.n), at })
      } while (again)
    } finally {
      claiming = false
    }
  }
  const listening = await client.listen('bench_wake', () => void claim().catch(() => {}))
  return {
    async end() {
      await listening.unlisten().catch(() => {})
      await client.end({ timeout: 1 })
    },
  }
}

serveParent(
  {
    cpu: cpuSampler(),
    // A no-op round trip through the store: is the child's pool answering?
    ping: async () => {
      await store.db.execute(sql`select 1`)
      return true
    },
  },
  async () => {
    await stopWorkers().catch(() => {})
    await bare?.end().catch(() => {})
    await store.close().catch(() => {})
  },
)
tellParent({ type: 'ready', pid: process.pid })
