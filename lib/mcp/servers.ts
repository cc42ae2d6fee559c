/**
 * The configured MCP servers of one process, connected on first use and kept: their tools under
 * the names a model sees (`<server>__<tool>`), each with whether its calls wait for approval,
 * and calls routed to their server. A server that cannot be reached is left out of this answer's
 * tools (logged once per failure) rather than failing it; the next answer tries it again.
 */
import { needsApproval, type McpServerConfig, type McpServers } from './config'
import { connectMcp, type McpCall, type McpConnection, type McpToolInfo, type TaskVerdict } from './client'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'

export interface McpOffer {
  /** What the model calls it: `<server>__<tool>`, in the characters chat-completions servers take. */
  modelName: string
  tool: McpToolInfo
  /** The operator's policy and the tool's annotation: a call waits for the user's yes first. */
  needsApproval: boolean
}

export interface McpRegistry {
  /** Every reachable server's tools, as offered to a model. */
  offers(): Promise<McpOffer[]>
  call(tool: McpToolInfo, args: Record<string, unknown>, call: McpCall): Promise<CallToolResult>
  /**
   * What became of the call under this idempotency key, if it ran as a task (`tasks/get`): one this
   * process started, or `recordedTask`, the id its caller recorded (a successor after a crash);
   * 'unknown' for any other (a plain call cannot be asked about in MCP).
   */
  askCall(server: string, idempotencyKey: string, recordedTask?: string): Promise<TaskVerdict>
  close(): Promise<void>
}

/** A model's tool name: `[A-Za-z0-9_-]{1,64}` (OpenAI's rule, which compatible servers share). */
export function modelToolName(server: string, tool: string): string {
  return `${server}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64)
}

export function mcpRegistry(
  servers: McpServers,
  connect: (name: string, config: McpServerConfig) => Promise<McpConnection> = connectMcp,
): McpRegistry {
  const connections = new Map<string, Promise<McpConnection>>()
  /** The task each call became, by idempotency key, in this process; the caller records it durably too (`onTask`). */
  const tasks = new Map<string, string>()
  const connection = (name: string): Promise<McpConnection> => {
    const config = servers[name]
    if (!config) return Promise.reject(new Error(`no MCP server "${name}" is configured`))
    let open = connections.get(name)
    if (!open) {
      open = connect(name, config)
      // A failed connection is forgotten, so the next use tries again.
      open.catch(() => connections.delete(name))
      connections.set(name, open)
    }
    return open
  }
  /** Runs `ask` on the server's connection; a connection that broke is reopened once. */
  const withServer = async <T>(name: string, ask: (c: McpConnection) => Promise<T>): Promise<T> => {
    const first = await connection(name)
    try {
      return await ask(first)
    } catch (error) {
      if (!isClosed(error)) throw error
      connections.delete(name)
      return ask(await connection(name))
    }
  }

  return {
    async offers() {
      const offers: McpOffer[] = []
      const taken = new Set<string>()
      for (const [name, config] of Object.entries(servers)) {
        let tools: McpToolInfo[]
        try {
          tools = await withServer(name, (c) => c.tools())
        } catch (error) {
          console.error(
            `[a2] MCP server "${name}" is not reachable; its tools are left out: ${error instanceof Error ? error.message : String(error)}`,
          )
          continue
        }
        for (const tool of tools) {
          const modelName = modelToolName(name, tool.name)
          if (taken.has(modelName)) continue // two tools that read the same to a model: the first is offered
          taken.add(modelName)
          offers.push({ modelName, tool, needsApproval: needsApproval(config, tool) })
        }
      }
      return offers
    },
    // Not retried on a broken connection: the call may have reached the server before it broke.
    call: async (tool, args, call) =>
      (await connection(tool.server)).call(tool, args, {
        ...call,
        onTask: async (taskId) => {
          tasks.set(call.idempotencyKey, taskId)
          await call.onTask?.(taskId)
        },
      }),
    async askCall(server, idempotencyKey, recordedTask) {
      const taskId = tasks.get(idempotencyKey) ?? recordedTask
      if (!taskId) return 'unknown'
      return withServer(server, (c) => c.askTask(taskId)).catch(() => 'unknown' as const)
    },
    async close() {
      const open = [...connections.values()]
      connections.clear()
      await Promise.all(open.map(async (c) => (await c.catch(() => undefined))?.close()))
    },
  }
}

/** The SDK's word for a connection that is gone (its transport closed, a stdio server that exited). */
function isClosed(error: unknown): boolean {
  return error instanceof Error && /Not connected|Connection closed/i.test(error.message)
}
