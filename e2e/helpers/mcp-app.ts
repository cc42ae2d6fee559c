/**
 * The built app (`next start`) started by a spec itself, on a free port, with the MCP servers it
 * is given configured the way an operator does (`A2_MCP_SERVERS`, an MCP client's `mcpServers`),
 * one model on a real upstream that calls tools, and its own PGlite directory. For the specs whose
 * tools are MCP servers (approvals.spec.ts, mcp-stop.spec.ts): the suite's shared app has none.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { expect } from '@playwright/test'
import { freePort } from './free-port'
import { E2E_LIMITS } from '../limits'

export interface McpApp {
  /** `http://127.0.0.1:<port>`: the spec's contexts take it as their baseURL. */
  base: string
  /** What the app printed so far (stdout and stderr): a failed start says why. */
  output(): string
  close(): Promise<void>
}

/** Starts the app and resolves once it answers; `name` prefixes its data directory. */
export async function startMcpApp(name: string, options: { upstreamUrl: string; mcpServers: Record<string, unknown> }): Promise<McpApp> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const dataDir = mkdtempSync(path.join(tmpdir(), `a2-${name}-e2e-`))
  let output = ''
  const child: ChildProcess = spawn('npx', ['next', 'start', '-p', String(port), '-H', '127.0.0.1'], {
    detached: true, // its own process group: stopped as a whole (the stdio MCP servers it spawned with it)
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      NEXT_TELEMETRY_DISABLED: '1',
      NEXT_MANUAL_SIG_HANDLE: 'true',
      AUTH_SECRET: `${name}-e2e-secret-0123456789abcdef0123456789`,
      A2_DATA_DIR: dataDir,
      DATABASE_URL: '',
      A2_MODELS: JSON.stringify([
        { id: 'upstream-e2e', label: 'Upstream', provider: 'openai', baseURL: options.upstreamUrl, apiKey: 'e2e', reasoning: false, tools: true },
      ]),
      A2_MCP_SERVERS: JSON.stringify({ mcpServers: options.mcpServers }),
      A2_WEBHOOK_URL: '',
      ...E2E_LIMITS,
    } as unknown as NodeJS.ProcessEnv,
  })
  child.stdout?.on('data', (chunk) => (output += chunk))
  child.stderr?.on('data', (chunk) => (output += chunk))
  const app: McpApp = {
    base,
    output: () => output,
    async close() {
      if (child.pid && child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        process.kill(-child.pid, 'SIGKILL')
        await exited
      }
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
  try {
    await expect
      .poll(
        async () =>
          child.exitCode !== null ? `exited ${child.exitCode}: ${output}` : (await fetch(`${base}/api/sessions`).catch(() => undefined))?.status,
        { timeout: 180_000 },
      )
      .toBe(200)
  } catch (error) {
    await app.close()
    throw error
  }
  return app
}
