/**
 * The MCP servers of figure 11's MCP rows: the test server (scripts/mcp-test-server.ts) holding
 * every call open (a call longer than any Stop), watched for the moment it has the cancellation:
 * over Streamable HTTP the call's response stream closed (the server runs in this process), over
 * stdio `notifications/cancelled` naming the call's request id (the server is a child of the
 * worker that connects to it; its log file is read here, each entry timed where it was written).
 * A call is matched to its Stop by its `message` argument: the sample's tag.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { startMcpTestServer, type McpLogEntry } from '@/scripts/mcp-test-server'
import type { McpServerConfig } from '@/lib/mcp/config'
import type { WatchedRequest } from './watched-request'

export interface BenchMcp {
  /** The server's entry for A2_MCP_SERVERS (its name in the rig: "bench"). */
  config: McpServerConfig
  /** Resolves when the call whose message is `tag` reached the server; its `closed` when the server has its cancellation. */
  wait(tag: string, ms?: number): Promise<WatchedRequest>
  close(): Promise<void>
}

/** 60 s per call: every Stop lands while the call is held. */
const HOLD_MS = 60_000

interface Watched extends WatchedRequest {
  markClosed(at: number): void
}

function watcher() {
  const byTag = new Map<string, Watched>()
  const byId = new Map<string | number, Watched>()
  const waiters = new Map<string, (w: Watched) => void>()
  const watched = (): Watched => {
    let resolve!: () => void
    const w: Watched = {
      closed: new Promise<void>((r) => (resolve = r)),
      closedEarly: true,
      markClosed(at) {
        if (w.closedAt !== undefined) return
        // On this process's performance clock, as the Stop's push is timed.
        w.closedAt = at - performance.timeOrigin
        resolve()
      },
    }
    return w
  }
  return {
    note(entry: McpLogEntry, at: number) {
      if (entry.type === 'received' && entry.message.method === 'tools/call') {
        const tag = (entry.message.params as { arguments?: { message?: string } } | undefined)?.arguments?.message
        if (!tag) return
        const w = watched()
        byTag.set(tag, w)
        byId.set(entry.message.id!, w)
        waiters.get(tag)?.(w)
        waiters.delete(tag)
      } else if (entry.type === 'stream-closed') {
        for (const id of entry.ids) byId.get(id)?.markClosed(at)
      } else if (entry.type === 'received' && entry.message.method === 'notifications/cancelled') {
        byId.get(entry.message.params!.requestId!)?.markClosed(at)
      }
    },
    wait(tag: string, ms = 20_000): Promise<WatchedRequest> {
      const known = byTag.get(tag)
      if (known) return Promise.resolve(known)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the MCP call ${tag} never reached the server`)), ms)
        waiters.set(tag, (w) => (clearTimeout(timer), resolve(w)))
      })
    },
  }
}

export async function startBenchMcpHttp(): Promise<BenchMcp> {
  const watch = watcher()
  const server = await startMcpTestServer({ holdMs: HOLD_MS, onNote: watch.note })
  return { config: { type: 'http', url: server.url }, wait: watch.wait, close: server.close }
}

/** The stdio server's log, read every 10 ms: the figure uses each entry's own time, not when it was read. */
export async function startBenchMcpStdio(): Promise<BenchMcp> {
  const watch = watcher()
  const logFile = join(mkdtempSync(join(tmpdir(), 'a2-bench-mcp-')), 'log.jsonl')
  let read = 0
  const timer = setInterval(() => {
    if (!existsSync(logFile)) return
    const text = readFileSync(logFile, 'utf8')
    const complete = text.lastIndexOf('\n') + 1
    for (const line of text.slice(read, complete).split('\n').filter(Boolean)) {
      const { at, ...entry } = JSON.parse(line) as McpLogEntry & { at: number }
      watch.note(entry as McpLogEntry, at)
    }
    read = complete
  }, 10)
  return {
    config: {
      type: 'stdio',
      command: process.execPath,
      args: ['--import', 'tsx', 'scripts/mcp-test-server.ts', '--stdio'],
      env: { MCP_HOLD_MS: String(HOLD_MS), MCP_LOG_FILE: logFile },
    },
    wait: watch.wait,
    close: async () => clearInterval(timer),
  }
}
