/**
 * The MCP test server (scripts/mcp-test-server.ts) as a stdio server the code under test spawns
 * itself: its configuration (this checkout's script, run by this Node with tsx) and its log,
 * read back from the file the child writes, so a test asserts what that process received.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { McpStdioServer } from '@/lib/mcp/config'
import type { McpLogEntry } from '@/scripts/mcp-test-server'

export interface StdioTestServer {
  config: McpStdioServer
  /** Every line the server process logged so far (every process spawned from `config` shares the file). */
  log(): McpLogEntry[]
}

export function stdioTestServer(holdMs = 0): StdioTestServer {
  const logFile = join(mkdtempSync(join(tmpdir(), 'a2-mcp-')), 'log.jsonl')
  return {
    config: {
      type: 'stdio',
      command: process.execPath,
      args: ['--import', 'tsx', join(process.cwd(), 'scripts/mcp-test-server.ts'), '--stdio'],
      env: { MCP_HOLD_MS: String(holdMs), MCP_LOG_FILE: logFile },
    },
    log: () =>
      existsSync(logFile)
        ? readFileSync(logFile, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as McpLogEntry)
        : [],
  }
}
