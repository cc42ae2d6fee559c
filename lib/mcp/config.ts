/**
 * The MCP servers an operator plugs in, in the shape MCP clients already share (Claude Desktop,
 * Cursor, LibreChat's `mcpServers`): a name → `{ command, args, env }` for a server the app
 * starts over stdio, or `{ url, headers }` for one it reaches over Streamable HTTP. A server's
 * README snippet pastes in as it is; keys other clients add (`disabled`, `autoApprove`, …) are
 * ignored rather than refused. lib/env.ts reads it from `A2_MCP_SERVERS` (JSON text) or
 * `A2_MCP_SERVERS_FILE` (a path) and validates it at boot with this schema.
 *
 * What this app adds, per server and per tool: `approval`, whether a call waits for the user's
 * yes before it runs. By default a tool that says it only reads (`readOnlyHint: true`) runs at
 * once and every other tool waits (MCP's own default: a tool is destructive unless it says not).
 */
import { z } from 'zod'

/**
 * A server's name becomes the prefix of its tools' names for the model (`<server>__<tool>`),
 * and chat-completions servers take tool names of `[A-Za-z0-9_-]{1,64}`.
 */
const SERVER_NAME = /^[A-Za-z0-9-]{1,24}$/

export const approvalPolicy = z.enum(['always', 'never', 'unless-read-only'])
export type ApprovalPolicy = z.infer<typeof approvalPolicy>

const common = {
  /** Whether a call waits for approval: 'unless-read-only' (the default), 'always' or 'never'. */
  approval: approvalPolicy.optional(),
  /** Per tool, by the server's own tool name: overrides the server's `approval`. */
  tools: z.record(z.string(), z.object({ approval: approvalPolicy }).strict()).optional(),
}

const stdioServer = z.object({
  type: z.literal('stdio'),
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().min(1).optional(),
  ...common,
})

const httpServer = z.object({
  // Streamable HTTP, whichever way another client spells it; the legacy SSE transport is not offered.
  type: z.literal('http'),
  url: z.url({ protocol: /^https?$/, error: 'an MCP server url is an http(s) URL' }),
  headers: z.record(z.string(), z.string()).optional(),
  ...common,
})

/** The transport, as other clients write it or as the entry's keys say (`command`: stdio; `url`: HTTP). */
const TRANSPORT_OF_TYPE: Record<string, 'stdio' | 'http'> = { stdio: 'stdio', http: 'http', 'streamable-http': 'http', streamableHttp: 'http' }
const serverEntry = z.preprocess(
  (entry) => {
    if (!entry || typeof entry !== 'object') return entry
    const { type } = entry as { type?: unknown }
    const transport = typeof type === 'string' ? TRANSPORT_OF_TYPE[type] : 'command' in entry ? 'stdio' : 'url' in entry ? 'http' : undefined
    return { ...entry, type: transport }
  },
  z.discriminatedUnion('type', [stdioServer, httpServer], {
    error: 'an MCP server is { command, args?, env? } (stdio) or { url, headers? } (Streamable HTTP)',
  }),
)

export type McpStdioServer = z.infer<typeof stdioServer>
export type McpHttpServer = z.infer<typeof httpServer>
export type McpServerConfig = McpStdioServer | McpHttpServer

export const isStdio = (config: McpServerConfig): config is McpStdioServer => config.type === 'stdio'

export const mcpServersSchema = z.object({
  mcpServers: z.record(z.string(), serverEntry).superRefine((servers, ctx) => {
    for (const name of Object.keys(servers)) {
      if (!SERVER_NAME.test(name))
        ctx.addIssue({ code: 'custom', message: `a server name is 1–24 letters, digits or "-" (not "${name}")`, path: [name] })
    }
  }),
})
export type McpServers = z.infer<typeof mcpServersSchema>['mcpServers']

/** JSON text (the variable's value or the file's contents) → the validated servers. */
export const mcpServersText = (source: string) =>
  z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown
      } catch {
        ctx.addIssue({ code: 'custom', message: `${source} must be JSON: { "mcpServers": { "<name>": { "command": … } | { "url": … } } }` })
        return z.NEVER
      }
    })
    .pipe(mcpServersSchema)
    .transform((parsed) => parsed.mcpServers)

/** Whether a call of this tool waits for approval, from the operator's policy and the tool's own annotation. */
export function needsApproval(config: McpServerConfig, tool: { name: string; readOnly: boolean }): boolean {
  const policy = config.tools?.[tool.name]?.approval ?? config.approval ?? 'unless-read-only'
  return policy === 'always' || (policy === 'unless-read-only' && !tool.readOnly)
}
