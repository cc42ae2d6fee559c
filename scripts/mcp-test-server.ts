/**
 * A real MCP server (built with @modelcontextprotocol/sdk) for tests, e2e and the bench, over
 * Streamable HTTP or stdio. Its tools write to a real table (the server's own, one row per
 * idempotency key) and every write, request and cancellation it sees goes to its log, so a test
 * asserts what the server itself received rather than what the client believes it sent:
 *
 * - `lookup_writes` (readOnlyHint): reads the table; holds `holdMs` first, honouring cancellation;
 * - `deliver` (destructiveHint): holds `holdMs`, honouring cancellation, then writes a row;
 * - `deliver_task` (Tasks extension, taskSupport 'required'): the call returns a task at once; its
 *   work holds `holdMs`, then writes unless `tasks/cancel` cancelled it first;
 * - `deliver_stubborn` (destructiveHint): ignores every cancellation and writes after `stubbornHoldMs` (default `holdMs`).
 *
 * A write is keyed by the `_meta` idempotency key the client sends (MCP_IDEMPOTENCY_META): a
 * repeat of a key is one row. Cancellation, as the 2026-07-28 revision asks: over HTTP a client
 * closing the request's response stream cancels it (logged `stream-closed` with the request's
 * ids); over stdio `notifications/cancelled` names the request id (logged `received` with it).
 *
 * Log lines (JSON, one per line, in `MCP_LOG_FILE` when set; `GET /__log` over HTTP):
 * `received` (every JSON-RPC message, id and `_meta` kept), `stream-closed`, `cancelled-honoured`,
 * `write`, `task-created`, `task-cancelled`, `stdin-closed`.
 *
 * Run: `tsx scripts/mcp-test-server.ts --stdio`, or with PORT for HTTP at `http://127.0.0.1:PORT/mcp`.
 * MCP_HOLD_MS sets the hold (default 0); MCP_STUBBORN_HOLD_MS `deliver_stubborn`'s (default MCP_HOLD_MS).
 */
import { appendFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'
import { pathToFileURL } from 'node:url'
import { performance } from 'node:perf_hooks'
import { z } from 'zod'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { MCP_IDEMPOTENCY_META } from '../lib/mcp/meta'

export type McpLogEntry =
  | {
      type: 'received'
      message: { id?: string | number; method?: string; params?: { _meta?: Record<string, unknown>; requestId?: string | number } }
    }
  | { type: 'stream-closed'; ids: Array<string | number> }
  | { type: 'cancelled-honoured'; tool: string; requestId: string | number }
  | { type: 'write'; tool: string; key: string; args: unknown }
  | { type: 'task-created'; taskId: string; key: string }
  | { type: 'task-cancelled'; taskId: string }
  | { type: 'stdin-closed' }

export interface McpTestServerOptions {
  holdMs?: number
  /** `deliver_stubborn`'s hold (default `holdMs`): short, so a test sees its write soon after a Stop the others honour. */
  stubbornHoldMs?: number
  logFile?: string
  /** Told each log entry as it is written, with its time (for a bench that times a cancellation's arrival). */
  onNote?: (entry: McpLogEntry, at: number) => void
}

/** Wall-clock ms with the sub-millisecond part: comparable across processes of one machine. */
const now = () => performance.timeOrigin + performance.now()

/** The server's table and log: shared by every session of one process. */
class ServerRecord {
  readonly log: McpLogEntry[] = []
  readonly writes = new Map<string, { tool: string; args: unknown }>()
  constructor(private readonly options: McpTestServerOptions) {}
  note(entry: McpLogEntry): void {
    const at = now()
    this.log.push(entry)
    if (this.options.logFile) appendFileSync(this.options.logFile, `${JSON.stringify({ at, ...entry })}\n`)
    this.options.onNote?.(entry, at)
  }
  write(tool: string, key: string, args: unknown): void {
    if (this.writes.has(key)) return // the idempotency key honoured: a repeat is one row
    this.writes.set(key, { tool, args })
    this.note({ type: 'write', tool, key, args })
  }
}

/**
 * Tasks live in the server, not in one MCP session: a client that reconnects (a successor worker
 * after its predecessor died) can still ask `tasks/get` about the task the dead one created.
 */
class ServerWideTaskStore extends InMemoryTaskStore {
  /** Each task's cancellation, so its work stops holding when `tasks/cancel` lands rather than after its hold. */
  private readonly cancels = new Map<string, AbortController>()
  cancelSignal(taskId: string): AbortSignal {
    let controller = this.cancels.get(taskId)
    if (!controller) this.cancels.set(taskId, (controller = new AbortController()))
    return controller.signal
  }
  override createTask(...[params, requestId, request]: Parameters<InMemoryTaskStore['createTask']>) {
    return super.createTask(params, requestId, request, undefined)
  }
  override getTask(taskId: string) {
    return super.getTask(taskId, undefined)
  }
  override storeTaskResult(...[taskId, status, result]: Parameters<InMemoryTaskStore['storeTaskResult']>) {
    return super.storeTaskResult(taskId, status, result, undefined)
  }
  override getTaskResult(taskId: string) {
    return super.getTaskResult(taskId, undefined)
  }
  override async updateTaskStatus(...[taskId, status, message]: Parameters<InMemoryTaskStore['updateTaskStatus']>) {
    await super.updateTaskStatus(taskId, status, message, undefined)
    if (status === 'cancelled') this.cancels.get(taskId)?.abort(new Error('tasks/cancel'))
  }
  override listTasks(cursor?: string) {
    return super.listTasks(cursor, undefined)
  }
}

const keyOf = (meta: unknown): string => {
  const key = (meta as { [k: string]: unknown } | undefined)?.[MCP_IDEMPOTENCY_META]
  return typeof key === 'string' ? key : `no-key:${randomUUID()}`
}

/** Resolves after `ms`, or rejects when `signal` aborts first (a server honouring cancellation). */
const hold = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const timer = setTimeout(resolve, ms)
    signal?.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true })
  })

const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] })

/** One McpServer (an MCP session) over the shared record; `cancelOf` gives a request's stream-close signal (HTTP). */
function buildServer(
  record: ServerRecord,
  { holdMs = 0, stubbornHoldMs = holdMs }: McpTestServerOptions,
  tasks: ServerWideTaskStore,
  cancelOf: (id: string | number) => AbortSignal | undefined,
) {
  const server = new McpServer(
    { name: 'a2-test-server', version: '1.0.0' },
    { capabilities: { tasks: { requests: { tools: { call: {} } }, cancel: {}, list: {} } }, taskStore: tasks },
  )
  /** Cancelled by notifications/cancelled (the SDK aborts extra.signal) or by the request's stream closing. */
  const cancelled = (extra: { signal: AbortSignal; requestId: string | number }) => {
    const closed = cancelOf(extra.requestId)
    return closed ? AbortSignal.any([extra.signal, closed]) : extra.signal
  }
  const honouring = async (tool: string, extra: { signal: AbortSignal; requestId: string | number }) => {
    try {
      await hold(holdMs, cancelled(extra))
    } catch (error) {
      record.note({ type: 'cancelled-honoured', tool, requestId: extra.requestId })
      throw error
    }
  }
  const message = { message: z.string().describe('What to deliver') }

  server.registerTool(
    'lookup_writes',
    {
      description: 'Read what was delivered so far.',
      inputSchema: { limit: z.number().int().min(1).max(50).optional() },
      annotations: { readOnlyHint: true },
    },
    async ({ limit }, extra) => {
      await honouring('lookup_writes', extra)
      return text(JSON.stringify([...record.writes.values()].slice(-(limit ?? 10))))
    },
  )
  server.registerTool(
    'deliver',
    {
      description: 'Deliver a message (a write that cannot be undone).',
      inputSchema: message,
      annotations: { destructiveHint: true, idempotentHint: false },
    },
    async (args, extra) => {
      await honouring('deliver', extra)
      record.write('deliver', keyOf(extra._meta), args)
      return text(`delivered: ${args.message}`)
    },
  )
  server.registerTool(
    'deliver_stubborn',
    { description: 'Deliver a message; once started it always completes.', inputSchema: message, annotations: { destructiveHint: true } },
    async (args, extra) => {
      await hold(stubbornHoldMs) // no signal: cancellation is ignored, as the spec lets a server do
      record.write('deliver_stubborn', keyOf(extra._meta), args)
      return text(`delivered: ${args.message}`)
    },
  )
  server.experimental.tasks.registerToolTask(
    'deliver_task',
    {
      description: 'Deliver a message as a task (long-running; ask its status with tasks/get).',
      inputSchema: message,
      annotations: { destructiveHint: true },
      execution: { taskSupport: 'required' },
    },
    {
      async createTask(args, extra) {
        const task = await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl ?? 10 * 60_000, pollInterval: 50 })
        const key = keyOf(extra._meta)
        record.note({ type: 'task-created', taskId: task.taskId, key })
        void (async () => {
          // tasks/cancel marks the task cancelled in the store (and wakes the hold): the work checks before it writes.
          await hold(holdMs, tasks.cancelSignal(task.taskId)).catch(() => undefined)
          const status = (await tasks.getTask(task.taskId))?.status
          if (status === 'cancelled') return record.note({ type: 'task-cancelled', taskId: task.taskId })
          if (!status) return // the server closed (its tasks with it)
          record.write('deliver_task', key, args)
          await tasks.storeTaskResult(task.taskId, 'completed', text(`delivered: ${args.message}`))
        })().catch(() => undefined) // the server closed mid-task: nothing to report to
        return { task }
      },
      getTask: (_args, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
    },
  )
  return server
}

/** Logs every JSON-RPC message the transport hands the server (its id and `_meta` included). */
function logReceived(transport: Transport, record: ServerRecord): void {
  const deliver = transport.onmessage
  transport.onmessage = (message, extra) => {
    record.note({ type: 'received', message: message as Extract<McpLogEntry, { type: 'received' }>['message'] })
    deliver?.(message, extra)
  }
}

export interface McpTestServer {
  url: string
  log: McpLogEntry[]
  writes: Map<string, { tool: string; args: unknown }>
  close(): Promise<void>
}

/** The HTTP server: stateful sessions (an `mcp-session-id` each), cancellation by a closed response stream. */
export async function startMcpTestServer(options: McpTestServerOptions & { port?: number } = {}): Promise<McpTestServer> {
  const record = new ServerRecord(options)
  const tasks = new ServerWideTaskStore()
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  /** A request's stream-close signal, by session and JSON-RPC id. */
  const closes = new Map<string, AbortController>()

  const http = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://mcp')
    if (url.pathname === '/__log') {
      res.writeHead(200, { 'content-type': 'application/json' })
      return res.end(JSON.stringify({ log: record.log, writes: [...record.writes.keys()] }))
    }
    if (url.pathname !== '/mcp') return void res.writeHead(404).end()
    const body = req.method === 'POST' ? await readJson(req) : undefined
    let sessionId = req.headers['mcp-session-id'] as string | undefined
    let transport = sessionId ? sessions.get(sessionId) : undefined
    if (!transport) {
      if (sessionId) return void res.writeHead(404).end()
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, transport!),
      })
      const own = transport
      transport.onclose = () => void (own.sessionId && sessions.delete(own.sessionId))
      const server = buildServer(record, options, tasks, (id) => closes.get(`${own.sessionId}:${id}`)?.signal)
      await server.connect(transport)
      logReceived(transport, record)
    }
    sessionId = transport.sessionId
    watchStream(req, res, body, record, (id) => {
      const controller = new AbortController()
      closes.set(`${sessionId ?? transport.sessionId}:${id}`, controller)
      return controller
    })
    await transport.handleRequest(req, res, body)
  })
  await new Promise<void>((resolve) => http.listen(options.port ?? 0, '127.0.0.1', resolve))
  const { port } = http.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    log: record.log,
    writes: record.writes,
    close: async () => {
      tasks.cleanup()
      await Promise.all([...sessions.values()].map((t) => t.close()))
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
  }
}

/**
 * A POST carrying requests whose response stream the client closes before it ends: the server
 * logs it and treats it as the cancellation of those requests (MCP 2026-07-28, Streamable HTTP).
 */
function watchStream(
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  record: ServerRecord,
  register: (id: string | number) => AbortController,
): void {
  const messages = Array.isArray(body) ? body : body ? [body] : []
  const ids = messages.filter((m) => m && typeof m === 'object' && 'id' in m && 'method' in m).map((m) => m.id as string | number)
  if (ids.length === 0) return
  const controllers = ids.map(register)
  res.on('close', () => {
    if (res.writableFinished) return
    record.note({ type: 'stream-closed', ids })
    for (const c of controllers) c.abort(new Error('the client closed the response stream'))
  })
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  let text = ''
  for await (const piece of req) text += piece
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The stdio server: one session on this process's stdin/stdout; cancellation by notifications/cancelled. */
export async function serveMcpOverStdio(options: McpTestServerOptions = {}): Promise<void> {
  const record = new ServerRecord(options)
  const tasks = new ServerWideTaskStore()
  const server = buildServer(record, options, tasks, () => undefined)
  const transport = new StdioServerTransport()
  await server.connect(transport)
  logReceived(transport, record)
  process.stdin.on('end', () => {
    record.note({ type: 'stdin-closed' })
    process.exit(0)
  })
}

const runDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href

if (runDirectly) {
  const holdMs = Number(process.env.MCP_HOLD_MS ?? 0)
  const options = {
    holdMs,
    stubbornHoldMs: Number(process.env.MCP_STUBBORN_HOLD_MS ?? holdMs),
    logFile: process.env.MCP_LOG_FILE || undefined,
  }
  if (process.argv.includes('--stdio')) await serveMcpOverStdio(options)
  else {
    const server = await startMcpTestServer({ ...options, port: Number(process.env.PORT ?? 4040) })
    console.log(`MCP test server listening on ${server.url}`)
  }
}
