/**
 * The operator's MCP servers (A2_MCP_SERVERS, lib/mcp/config.ts) as this process's tools: the
 * servers connected and their tools listed once, when a process that runs answers boots (a server
 * that cannot be reached then is left out, logged, until the next start), kept for every answer.
 */
import type { McpServers } from '@/lib/mcp/config'
import { mcpRegistry, type McpOffer, type McpRegistry } from '@/lib/mcp/servers'

export interface McpTools {
  registry: McpRegistry
  offers: McpOffer[]
}

export async function openMcpTools(servers: McpServers | undefined): Promise<McpTools | undefined> {
  if (!servers || Object.keys(servers).length === 0) return undefined
  const registry = mcpRegistry(servers)
  const offers = await registry.offers()
  console.log(`[a2] MCP: ${offers.length} tools from ${Object.keys(servers).length} servers (${offers.map((o) => o.modelName).join(', ')})`)
  return { registry, offers }
}
