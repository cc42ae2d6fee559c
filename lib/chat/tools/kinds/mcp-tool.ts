/**
 * An MCP server's tool (lib/mcp: the configured servers, the SDK's client) as a tool kind: named
 * `<server>__<tool>` for the model, its JSON Schema and description as the server lists them,
 * read-only when it says so (`readOnlyHint: true`). A call carries its idempotency key in
 * `_meta` and the run's signal (a Stop closes its HTTP response stream, or sends
 * `notifications/cancelled` over stdio). Cut off mid-call, a task is asked (`tasks/get`:
 * completed → done with its result; cancelled or failed, the server's own word → did not
 * happen); its id is in the log (the call's running state), so a successor after a crash asks
 * too. A plain call cannot be asked in MCP, so it stays "may have happened" for an operator.
 * A result the tool marks `isError` is the tool's own failure: the call failed, in its words.
 * A tool whose calls need approval (lib/mcp/config.ts) waits for the user's yes (answer/approvals.ts).
 */
import { jsonSchema } from 'ai'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import type { McpOffer, McpRegistry } from '@/lib/mcp/servers'
import type { ToolKind } from '../tool-kind'

export function mcpTool({ modelName, tool, needsApproval }: McpOffer, registry: McpRegistry): ToolKind<Record<string, unknown>, CallToolResult> {
  return {
    name: modelName,
    description: tool.description ?? `${tool.name}, a tool of the MCP server "${tool.server}"`,
    inputSchema: jsonSchema<Record<string, unknown>>(tool.inputSchema as Parameters<typeof jsonSchema>[0]),
    readOnly: tool.readOnly,
    // A call that needs the user's approval waits for it (answer/approvals.ts); the operator's `approval: "never"` runs it at once.
    approval: needsApproval ? { server: tool.server } : undefined,
    async dispatch(input, { idempotencyKey, signal, recordTask }) {
      // A task's id goes into the log as soon as the server made it: a successor asks about it (lookup) after a crash.
      const result = await registry.call(tool, input, { idempotencyKey, signal, onTask: recordTask })
      if (result.isError) throw new Error(textOf(result) || `${tool.name} reported an error`)
      return result
    },
    // A read changed nothing: a dead attempt's read is simply not done (no lookup: "not done").
    lookup: tool.readOnly
      ? undefined
      : async (idempotencyKey, recorded) => {
          const verdict = await registry.askCall(tool.server, idempotencyKey, recorded?.task)
          if (verdict === 'unknown') return 'unknown'
          return verdict.done ? { done: true, result: verdict.result } : { done: false }
        },
  }
}

/** A result's text parts, joined: what a failure says. */
function textOf(result: CallToolResult): string {
  return result.content
    .flatMap((part) => (part.type === 'text' ? [part.text] : []))
    .join('\n')
    .slice(0, 2_000)
}
