/**
 * One configured MCP server, reached with @modelcontextprotocol/sdk's client (the protocol is
 * not written here): its tools with their annotations, a call that carries its idempotency key
 * and stops when the run's signal aborts, and, for a server that supports the Tasks extension,
 * the call run as a task and settled by asking `tasks/get`.
 *
 * How an abort reaches the server (MCP 2026-07-28, "Transport-Specific Cancellation"):
 * - stdio: the SDK sends `notifications/cancelled` with the request's id (checked in client.test.ts);
 * - Streamable HTTP: closing the request's response stream *is* the cancellation. The SDK's
 *   transport aborts every stream only when the whole transport closes, and on a call's abort it
 *   sends `notifications/cancelled` and leaves the stream open; so this module adds exactly the
 *   missing piece: each call's POST is fetched with the call's own signal, so an abort closes that
 *   stream and no other. The notification is still sent, for servers of earlier revisions.
 * - a task: `tasks/cancel` with its task id, then `tasks/get` says what became of it.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { CallToolResultSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js'
import { isStdio, type McpServerConfig } from './config'
import { MCP_IDEMPOTENCY_META } from './meta'

export interface McpToolInfo {
  server: string
  name: string
  description?: string
  /** The tool's JSON Schema for its arguments, as the server lists it. */
  inputSchema: Tool['inputSchema']
  /** The server's annotations, kept as it gave them (hints: a server may be wrong, never trusted for safety alone). */
  annotations: NonNullable<Tool['annotations']>
  /** `readOnlyHint: true`: the tool changes nothing outside (MCP's default is false). */
  readOnly: boolean
  /** Whether a call runs as a task (the Tasks extension): required, optional or forbidden by the tool. */
  taskSupport: 'required' | 'optional' | 'forbidden'
}

/** What a server says of a task: done with its result, ended without happening (its own word), or it cannot say. */
export type TaskVerdict = { done: true; result: CallToolResult } | { done: false; status: 'cancelled' | 'failed' } | 'unknown'

export interface McpCall {
  idempotencyKey: string
  signal: AbortSignal
  /** Told the task's id as soon as the server created it, before the call settles (so it can be recorded). */
  onTask?: (taskId: string) => void | Promise<void>
}

export interface McpConnection {
  readonly name: string
  readonly config: McpServerConfig
  tools(): Promise<McpToolInfo[]>
  /** Runs the call (as a task where the tool and server support it); rejects with the signal's reason when it aborts. */
  call(tool: McpToolInfo, args: Record<string, unknown>, call: McpCall): Promise<CallToolResult>
  /** Asks the server what became of a task (`tasks/get`, then `tasks/result` when it completed). */
  askTask(taskId: string): Promise<TaskVerdict>
  close(): Promise<void>
}

/** 5 s for a server to answer about a task (or take its cancel): past it the call stays "may have happened". */
const ASK_TIMEOUT_MS = 5_000
/** How long a server keeps a task's result for us: an hour covers a Stop, a crash and a successor asking. */
const TASK_TTL_MS = 60 * 60_000

export async function connectMcp(name: string, config: McpServerConfig): Promise<McpConnection> {
  /** Each call's signal, by its idempotency key: the HTTP fetch of that call's POST listens to it. */
  const inFlight = new Map<string, AbortSignal>()
  const transport = isStdio(config)
    ? new StdioClientTransport({ command: config.command, args: config.args, env: { ...getDefaultEnvironment(), ...config.env }, cwd: config.cwd })
    : new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: config.headers ? { headers: config.headers } : undefined,
        fetch: (url, init) => fetch(url, withCallSignal(init, inFlight)),
      })
  const client = new Client({ name: 'a2-chat', version: '1.0.0' })
  // A stream the call's abort closed reports here; the call itself rejects with the abort.
  client.onerror = () => undefined
  await client.connect(transport)

  const taskCapable = () => Boolean(client.getServerCapabilities()?.tasks?.requests?.tools?.call)

  return {
    name,
    config,
    async tools() {
      const tools: McpToolInfo[] = []
      let cursor: string | undefined
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined)
        for (const tool of page.tools) tools.push(toolInfo(name, tool))
        cursor = page.nextCursor
      } while (cursor)
      return tools
    },

    async call(tool, args, { idempotencyKey, signal, onTask }) {
      signal.throwIfAborted()
      const params = { name: tool.name, arguments: args, _meta: { [MCP_IDEMPOTENCY_META]: idempotencyKey } }
      inFlight.set(idempotencyKey, signal)
      try {
        const asTask = tool.taskSupport === 'required' || (tool.taskSupport === 'optional' && taskCapable())
        if (!asTask) {
          return (await client.callTool(params, CallToolResultSchema, { signal }).catch((error) => {
            throw signal.aborted ? signal.reason : error
          })) as CallToolResult
        }
        let taskId: string | undefined
        for await (const message of client.experimental.tasks.callToolStream(params, CallToolResultSchema, { signal, task: { ttl: TASK_TTL_MS } })) {
          if (message.type === 'taskCreated') {
            taskId = message.task.taskId
            await onTask?.(taskId)
          } else if (message.type === 'result') return message.result as CallToolResult
          else if (message.type === 'error') {
            if (!signal.aborted) throw message.error
            // The run stopped: the task is asked to stop too; what it became is for askTask to say.
            if (taskId) await client.experimental.tasks.cancelTask(taskId, { timeout: ASK_TIMEOUT_MS }).catch(() => undefined)
            throw signal.reason
          }
        }
        throw new Error(`${name}/${tool.name}: the task ended without a result`)
      } finally {
        inFlight.delete(idempotencyKey)
      }
    },

    async askTask(taskId) {
      try {
        const task = await client.experimental.tasks.getTask(taskId, { timeout: ASK_TIMEOUT_MS })
        if (task.status === 'cancelled' || task.status === 'failed') return { done: false, status: task.status }
        if (task.status !== 'completed') return 'unknown'
        const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, { timeout: ASK_TIMEOUT_MS })
        return { done: true, result: result as CallToolResult }
      } catch {
        return 'unknown' // unreachable, task unknown to it, expired: it cannot say
      }
    },

    close: () => client.close(),
  }
}

function toolInfo(server: string, tool: Tool): McpToolInfo {
  const annotations = tool.annotations ?? {}
  return {
    server,
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    annotations,
    readOnly: annotations.readOnlyHint === true,
    taskSupport: tool.execution?.taskSupport ?? 'forbidden',
  }
}

/** A POST carrying a call's `tools/call` is fetched with that call's signal too: its abort closes the response stream. */
function withCallSignal(init: RequestInit | undefined, inFlight: ReadonlyMap<string, AbortSignal>): RequestInit | undefined {
  if (!init || typeof init.body !== 'string' || !init.body.includes(MCP_IDEMPOTENCY_META)) return init
  let key: unknown
  try {
    key = (JSON.parse(init.body) as { params?: { _meta?: Record<string, unknown> } }).params?._meta?.[MCP_IDEMPOTENCY_META]
  } catch {
    return init
  }
  const signal = typeof key === 'string' ? inFlight.get(key) : undefined
  if (!signal) return init
  return { ...init, signal: init.signal ? AbortSignal.any([init.signal, signal]) : signal }
}
