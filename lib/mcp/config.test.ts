/**
 * The operator's MCP servers: the shape MCP clients share, from A2_MCP_SERVERS or the file
 * A2_MCP_SERVERS_FILE names (empty = unset), validated at boot with a message that names the
 * place of each problem; and the approval policy (default: every tool not marked read-only waits).
 */
import { describe, expect, it } from 'vitest'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidEnvironment, parseEnv } from '../env'
import { needsApproval, type McpServerConfig } from './config'

const file = (text: string) => {
  const path = join(mkdtempSync(join(tmpdir(), 'a2-mcp-config-')), 'mcp.json')
  writeFileSync(path, text)
  return path
}
const problemsOf = (source: Record<string, string>) => {
  try {
    parseEnv(source)
  } catch (error) {
    if (error instanceof InvalidEnvironment) return error.problems
    throw error
  }
  throw new Error('parsed')
}

// As the servers' READMEs give them: an npm server over stdio, one over Streamable HTTP.
const shared = {
  mcpServers: {
    filesystem: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'] },
    notes: { type: 'http', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer x' }, autoApprove: [] },
  },
}

describe('MCP servers in the environment', () => {
  it('reads the shared shape from the variable, keys other clients add ignored', () => {
    const servers = parseEnv({ A2_MCP_SERVERS: JSON.stringify(shared) }).A2_MCP_SERVERS!
    expect(servers.filesystem).toEqual({ type: 'stdio', command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'] })
    expect(servers.notes).toEqual({ type: 'http', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer x' } })
  })

  it('reads the same from a file; empty values are unset', () => {
    expect(parseEnv({ A2_MCP_SERVERS_FILE: file(JSON.stringify(shared)) }).A2_MCP_SERVERS).toEqual(
      parseEnv({ A2_MCP_SERVERS: JSON.stringify(shared) }).A2_MCP_SERVERS,
    )
    expect(parseEnv({ A2_MCP_SERVERS: '', A2_MCP_SERVERS_FILE: ' ' }).A2_MCP_SERVERS).toBeUndefined()
  })

  it('refuses with a message naming the place of each problem', () => {
    expect(problemsOf({ A2_MCP_SERVERS: '{ not json' })).toMatch(/A2_MCP_SERVERS must be JSON/)
    expect(problemsOf({ A2_MCP_SERVERS: JSON.stringify({ filesystem: { command: 'npx' } }) })).toMatch(/→ at A2_MCP_SERVERS\.mcpServers/)
    expect(problemsOf({ A2_MCP_SERVERS: JSON.stringify({ mcpServers: { x: { args: [] } } }) })).toMatch(
      /\{ command, args\?, env\? \} \(stdio\) or \{ url, headers\? \} \(Streamable HTTP\)[\s\S]*A2_MCP_SERVERS\.mcpServers\.x/,
    )
    expect(problemsOf({ A2_MCP_SERVERS: JSON.stringify({ mcpServers: { 'a b': { command: 'x' } } }) })).toMatch(/server name/)
    expect(problemsOf({ A2_MCP_SERVERS: JSON.stringify({ mcpServers: { x: { url: 'file:///etc/passwd' } } }) })).toMatch(/http\(s\)/)
    expect(problemsOf({ A2_MCP_SERVERS: JSON.stringify({ mcpServers: { x: { command: 'y', approval: 'sometimes' } } }) })).toMatch(/approval/)
    const bad = file('{"mcpServers": {"x": {"url": "nope"}}}')
    expect(problemsOf({ A2_MCP_SERVERS_FILE: bad })).toContain(bad)
    expect(problemsOf({ A2_MCP_SERVERS_FILE: '/nonexistent/mcp.json' })).toMatch(/cannot read \/nonexistent\/mcp\.json \(ENOENT\)/)
    expect(problemsOf({ A2_MCP_SERVERS: JSON.stringify(shared), A2_MCP_SERVERS_FILE: file(JSON.stringify(shared)) })).toMatch(/not both/)
  })
})

describe('which calls wait for approval', () => {
  const server: McpServerConfig = { type: 'stdio', command: 'x', args: [] }
  it('by default every tool not marked read-only', () => {
    expect(needsApproval(server, { name: 'read', readOnly: true })).toBe(false)
    expect(needsApproval(server, { name: 'write', readOnly: false })).toBe(true)
  })
  it('the operator sets it per server and per tool, the tool winning', () => {
    const always: McpServerConfig = { ...server, approval: 'always', tools: { read: { approval: 'never' } } }
    expect(needsApproval(always, { name: 'other', readOnly: true })).toBe(true)
    expect(needsApproval(always, { name: 'read', readOnly: true })).toBe(false)
    const never: McpServerConfig = { ...server, approval: 'never', tools: { wipe: { approval: 'always' } } }
    expect(needsApproval(never, { name: 'write', readOnly: false })).toBe(false)
    expect(needsApproval(never, { name: 'wipe', readOnly: false })).toBe(true)
  })
})
