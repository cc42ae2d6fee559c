/**
 * The chat rig shared by figures 1, 2 and 6: the upstream model server and the bench's
 * HTTP server in this process, the chat's a2 server (pushes, tails), and the `generate`
 * worker — on another process (Postgres) or in this one (PGlite, which is one process's
 * database).
 */
import { createOpenAI } from '@ai-sdk/openai'
import type { LanguageModel } from 'ai'
import { sql } from 'drizzle-orm'
import type { A2Server, Store } from '@/lib/a2/server'
import { buildChatServer } from '@/lib/chat/server/chat-server'
import { resetEnvForTests } from '@/lib/env'
import type { Chat } from '@/lib/chat/contract'
import { chatFold } from '@/lib/chat/fold/checkpoint'
import { snapshotAsk, snapshotFold, snapshotResponse } from '@/lib/chat/server/snapshot'
import { OWNER, serveBench, type BenchHttp } from './http'
import { requestsByTag, startBenchUpstream, type Upstream } from './upstream'
import { spawnChild, type Child } from './children'
import { until } from './time'
import { postgresPids, rows } from './db'
import { cpuMeter, loopDelay, pidsCpu, processCpu } from './machine'
import { sampleDatabase, type DbSample } from './db-sampler'
import { startBenchWebhook, type BenchWebhook } from './webhook'
import { startBenchMcpHttp, startBenchMcpStdio, type BenchMcp } from './mcp'
import { openMcpTools } from '@/lib/chat/tools/mcp'

export interface CpuSample {
  machineBusyPct?: number
  parentPct: number
  workerPct?: number
  postgresPct?: number
  /** Processes outside the rig that served the phase's chats (figure 16: the anchor server and redis-server). */
  othersPct?: number
  /** Event-loop delay (ms) of this process and of the worker child. */
  parentLag: { p50: number; p99: number; max: number }
  workerLag?: { p50: number; p99: number; max: number }
  /** With --profile on Postgres: what the database's backends were doing. */
  db?: DbSample
}

export interface ChatRig {
  kind: 'postgres' | 'pglite'
  store: Store
  chat: A2Server<Chat>
  upstream: Upstream
  byTag: ReturnType<typeof requestsByTag>
  /** The sendWebhook tool's receiver (A2_WEBHOOK_URL of the chat server and the worker), with `webhook: true`: figure 11. */
  webhook?: BenchWebhook
  /** MCP servers over Streamable HTTP and stdio (A2_MCP_SERVERS of whoever runs answers), with `mcp: true`: figure 11. */
  mcp?: { http: BenchMcp; stdio: BenchMcp }
  http: BenchHttp
  /** The same upstream through the AI SDK directly: the baselines' model. */
  model: LanguageModel
  worker: Child | 'in-process'
  /**
   * CPU since the previous call: machine busy % (all cores), this process and the worker
   * child in % of one core. Evidence for where a slow figure spent its time.
   */
  cpu(): Promise<CpuSample>
  /** Waits until no generate run is open (between rounds, so they do not overlap). */
  settled(timeoutMs?: number): Promise<void>
  close(): Promise<void>
}

/** Enough attempts at once for the 500-chat scale figure (the library default is 64). */
export const WORKER_CONCURRENCY = 600

export async function openChatRig(options: {
  kind: 'postgres' | 'pglite'
  store: Store
  dbUrl?: string
  tokenMs: number
  profileDir?: string
  /** Sample pg_stat_activity (the database-side profile) between cpu() calls. */
  sampleDb?: boolean
  /**
   * Configure the sendWebhook tool with a receiver of the rig's. Off for the other figures: each
   * answer's request carries its tools, and the SDK converts every tool's schema per request.
   */
  webhook?: boolean
  /** Configure two MCP servers (`http__*` and `stdio__*` tools), no approval asked. */
  mcp?: boolean
}): Promise<ChatRig> {
  const upstream = await startBenchUpstream(options.tokenMs)
  // Figure 8 answers in a session of 100k events, past the app's default cap (50,000), which
  // counts the answer's chunks: the rig's sessions may hold 1M (its worker child inherits it).
  process.env.A2_MAX_EVENTS_PER_SESSION ??= '1000000'
  resetEnvForTests()
  const webhook = options.webhook ? await startBenchWebhook() : undefined
  // No webhook: '' (unset would fall back to the process's A2_WEBHOOK_URL).
  const webhookUrl = webhook?.url ?? ''
  const mcp = options.mcp ? { http: await startBenchMcpHttp(), stdio: await startBenchMcpStdio() } : undefined
  // No approval asked: the figure times a Stop mid-call, not a decision.
  // `gated` is the HTTP server again, its every call waiting for approval: figure 11's approval round trip.
  const mcpServers = mcp && {
    http: { ...mcp.http.config, approval: 'never' as const },
    stdio: { ...mcp.stdio.config, approval: 'never' as const },
    gated: { ...mcp.http.config, approval: 'always' as const },
  }
  // Only the process that runs answers connects (a second stdio server would write to the same log).
  const mcpTools = options.kind === 'pglite' && mcpServers ? await openMcpTools(mcpServers) : undefined
  const { server: chat } = buildChatServer(
    options.store,
    { OPENAI_API_KEY: 'bench', OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'bench' },
    webhookUrl,
    mcpTools,
  )
  const model = createOpenAI({ apiKey: 'bench', baseURL: upstream.url }).chat('bench')
  // The snapshot route's answer as the app makes it (lib/chat/server/snapshot.ts), for figure 8's opens from a client.
  const snapshot = async (request: Request, sessionId: string) =>
    snapshotResponse(snapshotAsk(request), await chat.fold(sessionId, OWNER, chatFold, snapshotFold(snapshotAsk(request))))
  const http = await serveBench({ a2: chat, model, snapshot })
  let worker: ChatRig['worker']
  if (options.kind === 'postgres') {
    worker = await spawnChild('worker-child.ts', ['chat'], {
      env: {
        BENCH_DB_URL: options.dbUrl!,
        BENCH_UPSTREAM_URL: upstream.url,
        BENCH_WEBHOOK_URL: webhookUrl,
        BENCH_MCP_SERVERS: mcpServers ? JSON.stringify(mcpServers) : '',
        BENCH_WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
        PGAPPNAME: 'a2-bench-worker',
      },
      execArgv: options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.profileDir}/worker-chat`] : [],
    })
  } else {
    await chat.startWorker({ concurrency: WORKER_CONCURRENCY })
    worker = 'in-process'
  }
  let machineMeter = cpuMeter()
  let parentMeter = processCpu()
  let parentDelay = loopDelay()
  const pids = postgresPids(options.store)
  let postgresMeter = options.kind === 'postgres' ? await pidsCpu(pids) : undefined
  const startSampler = () => (options.sampleDb && options.dbUrl ? sampleDatabase(options.dbUrl) : undefined)
  let sampler = startSampler()
  if (worker !== 'in-process') await worker.call({ cmd: 'cpu' })
  return {
    kind: options.kind,
    store: options.store,
    chat,
    upstream,
    byTag: requestsByTag(upstream),
    webhook,
    mcp,
    http,
    model,
    worker,
    async cpu() {
      const child =
        worker === 'in-process' ? undefined : await worker.call<{ pct: number; lag: CpuSample['parentLag'] }>({ cmd: 'cpu' }).catch(() => undefined)
      const sample: CpuSample = {
        machineBusyPct: machineMeter.stop()?.busyPct,
        parentPct: parentMeter.stop(),
        parentLag: parentDelay.stop(),
        workerPct: child?.pct,
        workerLag: child?.lag,
        postgresPct: await postgresMeter?.stop(),
      }
      sample.db = await sampler?.stop()
      sampler = startSampler()
      postgresMeter = options.kind === 'postgres' ? await pidsCpu(pids) : undefined
      machineMeter = cpuMeter()
      parentMeter = processCpu()
      parentDelay = loopDelay()
      return sample
    },
    async settled(timeoutMs = 20_000) {
      await until(
        async () => {
          const [row] = await rows<{ open: number }>(
            options.store,
            sql`select count(*)::int as open from a2_jobs where consumer = 'generate' and status in ('ACTIVE', 'CANCELLING')`,
          )
          return Number(row.open) === 0
        },
        timeoutMs,
        'generate runs to settle',
        25,
      )
    },
    async close() {
      await sampler?.stop()
      if (worker === 'in-process') await chat.stopWorkers({ graceMs: 500 })
      else await worker.stop()
      await http.close()
      await upstream.close()
      await webhook?.close()
      await mcpTools?.registry.close()
      await mcp?.http.close()
      await mcp?.stdio.close()
    },
  }
}
