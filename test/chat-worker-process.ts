/**
 * The chat's worker in a child process, for tests that kill it (`kill -9`) mid-answer:
 *
 *   A2_TEST_STORE=postgres://… | pglite:<dir>  OPENAI_BASE_URL=… A2_WEBHOOK_URL=… \
 *   [A2_ASK=<prompt>] [A2_MCP_SERVERS=<{ "mcpServers": … }>] node --import tsx test/chat-worker-process.ts
 *
 * It opens the store (a PGlite directory is one process's database, so it migrates it and,
 * with A2_ASK, starts the conversation itself: the parent cannot open it while this runs),
 * builds the chat server with a worker, and reports on stdout, one JSON object a line:
 * `{ t: 'ready', pid }`, then `{ t: 'asked', sessionId }` when it started the conversation, and
 * with A2_APPROVAL=report|approve `{ t: 'waiting', sessionId }` once that answer's tool call
 * waits for approval and its generate run has ended (the wait holds no worker: what a kill then
 * leaves is the log alone); with `approve` it then approves that call itself, as its owner's tab
 * would (the parent cannot push into a PGlite directory this process holds), so its worker runs it.
 * It exits when stdin closes (the parent went away); SIGKILL is the crash.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { openPgliteStore, openPostgresStore, type A2Server } from '@/lib/a2/server'
import type { Chat, ChatEvent } from '@/lib/chat/contract'
import { admitChatPush, referencedIds } from '@/lib/chat/server/admission'
import { argsHash } from '@/lib/chat/tools/approval-args'
import { migrateDatabase } from '@/lib/store/migrate'
import { listRuns, waitUntil } from '@/lib/a2/testing'
import { buildChatServer } from '@/lib/chat/server/chat-server'
import { openMcpTools } from '@/lib/chat/tools/mcp'
import { mcpServersText } from '@/lib/mcp/config'
import { ask } from './chat'

export type ChildReport = { t: 'ready'; pid: number } | { t: 'asked'; sessionId: string } | { t: 'waiting'; sessionId: string }

export interface ChatWorkerChild {
  process: ChildProcess
  /** Resolves with the first report of this kind; rejects if the child exits first. */
  report<T extends ChildReport['t']>(t: T): Promise<Extract<ChildReport, { t: T }>>
  kill(): Promise<void>
}

export function spawnChatWorker(env: {
  store: string
  upstream: string
  webhook: string
  ask?: string
  owner?: string
  /** The operator's MCP servers (as A2_MCP_SERVERS has them), for the worker's tools. */
  mcpServers?: Record<string, unknown>
  /** Report the answer's call once it waits for approval ('report'), and approve it then ('approve': this worker runs it). */
  approval?: 'report' | 'approve'
}): ChatWorkerChild {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(process.cwd(), 'test', 'chat-worker-process.ts')], {
    cwd: process.cwd(),
    env: {
      ...process.env,
      A2_TEST_STORE: env.store,
      OPENAI_BASE_URL: env.upstream,
      A2_WEBHOOK_URL: env.webhook,
      ...(env.ask !== undefined && { A2_ASK: env.ask, A2_ASK_OWNER: env.owner ?? 'crash' }),
      ...(env.mcpServers && { A2_MCP_SERVERS: JSON.stringify({ mcpServers: env.mcpServers }) }),
      ...(env.approval && { A2_APPROVAL: env.approval }),
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const reports: ChildReport[] = []
  const waiters = new Set<() => void>()
  let stderr = ''
  let buffered = ''
  child.stdout!.setEncoding('utf8')
  child.stdout!.on('data', (chunk: string) => {
    buffered += chunk
    for (let newline = buffered.indexOf('\n'); newline >= 0; newline = buffered.indexOf('\n')) {
      const line = buffered.slice(0, newline).trim()
      buffered = buffered.slice(newline + 1)
      if (line.startsWith('{')) reports.push(JSON.parse(line) as ChildReport)
    }
    for (const wake of [...waiters]) wake()
  })
  child.stderr!.setEncoding('utf8')
  child.stderr!.on('data', (chunk: string) => (stderr += chunk))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.once('exit', () => [...waiters].forEach((wake) => wake()))
  return {
    process: child,
    report(t) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = reports.find((r) => r.t === t)
          if (hit) return (waiters.delete(check), resolve(hit as never))
          if (child.exitCode !== null || child.signalCode !== null) {
            waiters.delete(check)
            reject(new Error(`the chat worker exited (${child.exitCode ?? child.signalCode}) before "${t}"; stderr:\n${stderr}`))
          }
        }
        waiters.add(check)
        check()
      })
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
    },
  }
}

async function main() {
  const where = process.env.A2_TEST_STORE!
  const store = where.startsWith('pglite:') ? await openPgliteStore({ dataDir: where.slice('pglite:'.length) }) : await openPostgresStore(where)
  if (store.kind === 'pglite') await migrateDatabase(store)
  const mcp = process.env.A2_MCP_SERVERS ? await openMcpTools(mcpServersText('A2_MCP_SERVERS').parse(process.env.A2_MCP_SERVERS)) : undefined
  const { server } = buildChatServer(
    store,
    { OPENAI_BASE_URL: process.env.OPENAI_BASE_URL, OPENAI_MODEL: 'upstream' },
    process.env.A2_WEBHOOK_URL,
    mcp,
  )
  await server.startWorker({ pollMs: 50 })
  console.log(JSON.stringify({ t: 'ready', pid: process.pid }))
  if (process.env.A2_ASK) {
    const owner = process.env.A2_ASK_OWNER!
    const sessionId = await ask(server, owner, process.env.A2_ASK)
    console.log(JSON.stringify({ t: 'asked', sessionId }))
    if (process.env.A2_APPROVAL) {
      await waitUntil(
        async () => {
          const events = await server.read(sessionId, owner, { limit: 10_000 })
          const waits = events.some((e) => e.type === 'tool.state' && e.payload.state === 'awaiting-approval')
          return (waits && (await listRuns(store, { consumer: 'generate', sessionId })).every((r) => r.status === 'COMPLETED')) || undefined
        },
        'the call to wait for approval',
        60_000,
      )
      console.log(JSON.stringify({ t: 'waiting', sessionId }))
      if (process.env.A2_APPROVAL === 'approve') await approveWaitingCall(server, owner, sessionId)
    }
  }
  process.stdin.resume()
  process.stdin.once('end', () => process.exit(0))
}

/** The answer's waiting call approved as the events route takes a tab's decision (bound to its arguments and cancel_version 0). */
async function approveWaitingCall(server: A2Server<Chat>, owner: string, sessionId: string): Promise<void> {
  const events = (await server.read(sessionId, owner, { limit: 10_000 })) as ChatEvent[]
  const wait = events.find((e) => e.type === 'tool.state' && e.payload.state === 'awaiting-approval')
  if (wait?.type !== 'tool.state') throw new Error('no call waits for approval')
  const { of, call, input } = wait.payload
  await server.push(
    sessionId,
    owner,
    { id: 'approve1', type: 'tool.decision', payload: { of, call, decision: 'approve', args: argsHash(input), cancelVersion: 0 } },
    { refersTo: referencedIds, admit: (inputs, found) => admitChatPush(server, owner, inputs, found, { id: sessionId }) },
  )
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main()
