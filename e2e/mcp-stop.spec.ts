/**
 * A Stop while an MCP tool call is in flight, in Chromium, against the built app started here with
 * two MCP servers (scripts/mcp-test-server.ts) configured as an operator does: `web` over
 * Streamable HTTP (in this process) and `local` over stdio (the app spawns it, `npx tsx … --stdio`,
 * its log in a file). A real upstream calls the tool; the call is approved (destructive tools wait
 * for it by default) and stopped mid-call. The evidence is the server's own log: the cancellation
 * arrived (HTTP: the call's response stream closed; stdio: `notifications/cancelled` naming the
 * request's id; a task: `tasks/cancel`), and the tool honoured it (no write) or did not (stubborn:
 * a write). The page says what is known, live, in a second tab and after a reload: "Stopped — did
 * not happen" only for a read or on the server's own word (a task it reports cancelled); a plain
 * call cut off "May have happened", since MCP cannot be asked whether it ran.
 */
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { expect, test, type Browser, type Locator } from '@playwright/test'
import { startMcpTestServer, type McpLogEntry, type McpTestServer } from '../scripts/mcp-test-server'
import { startUpstream, type Upstream } from '../scripts/upstream-server'
import { MCP_IDEMPOTENCY_META } from '../lib/mcp/meta'
import { ChatPage } from './pages/chat'
import { startMcpApp, type McpApp } from './helpers/mcp-app'

/** A tool that honours cancellation holds this long: a Stop always lands mid-call, however loaded the machine. */
const HOLD_MS = 60_000
/** The stubborn tool's hold: long enough for the Stop to land first, short enough to see its write soon after. */
const STUBBORN_HOLD_MS = 5_000

type Transport = 'http' | 'stdio'
const SERVER: Record<Transport, string> = { http: 'web', stdio: 'local' }

let app: McpApp | undefined
let web: McpTestServer | undefined
let upstream: Upstream | undefined
let stdioDir = ''

test.beforeAll(async () => {
  test.setTimeout(240_000)
  web = await startMcpTestServer({ holdMs: HOLD_MS, stubbornHoldMs: STUBBORN_HOLD_MS })
  upstream = await startUpstream({ tokenMs: 10, tokens: 20 })
  stdioDir = mkdtempSync(path.join(tmpdir(), 'a2-mcp-stop-e2e-'))
  app = await startMcpApp('mcp-stop', {
    upstreamUrl: upstream.url,
    mcpServers: {
      [SERVER.http]: { url: web.url },
      // As an MCP server's README has it; the app's cwd is this checkout.
      [SERVER.stdio]: {
        command: 'npx',
        args: ['tsx', 'scripts/mcp-test-server.ts', '--stdio'],
        env: { MCP_HOLD_MS: String(HOLD_MS), MCP_STUBBORN_HOLD_MS: String(STUBBORN_HOLD_MS), MCP_LOG_FILE: path.join(stdioDir, 'log.jsonl') },
      },
    },
  })
})

test.afterAll(async () => {
  await app?.close()
  await web?.close()
  await upstream?.close()
  if (stdioDir) rmSync(stdioDir, { recursive: true, force: true })
})

/** What the server of `transport` logged so far: in this process (HTTP), or in the stdio server's file. */
function serverLog(transport: Transport): McpLogEntry[] {
  if (transport === 'http') return web!.log
  const file = path.join(stdioDir, 'log.jsonl')
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as McpLogEntry)
}

type Received = Extract<McpLogEntry, { type: 'received' }>
const received = (log: McpLogEntry[], method: string) => log.filter((e): e is Received => e.type === 'received' && e.message.method === method)

interface InFlight {
  chat: ChatPage
  /** A second tab on the same chat, open since the question was sent. */
  other: ChatPage
  /** The server's JSON-RPC id of the `tools/call` request, and the idempotency key it carried. */
  requestId: string | number
  key: string
}

/** A new chat calls `tool` (approving it when it waits), and resolves once the server has the call and the page shows it running. */
async function callInFlight(browser: Browser, transport: Transport, tool: string, args: object): Promise<InFlight> {
  const context = await browser.newContext({ baseURL: app!.base })
  const chat = new ChatPage(await context.newPage())
  await chat.goto('/')
  await chat.waitForIdentity()
  const before = received(serverLog(transport), 'tools/call').length
  await chat.send(`Do it [[call ${SERVER[transport]}__${tool} ${JSON.stringify(args)}]]`)
  // The second tab follows the chat live from here on (opened now, not while the call holds: a stubborn call's hold is short).
  const other = new ChatPage(await context.newPage())
  await other.goto(new URL(chat.page.url()).pathname)
  const state = chat.lastAnswer().getByTestId('tool-call-state')
  if (tool !== 'lookup_writes') {
    await expect(state).toHaveText('Waiting for your approval')
    await chat.lastAnswer().getByTestId('tool-approve').click()
  }
  await expect(state).toHaveText('Running…')
  const call = await pollFor(() => received(serverLog(transport), 'tools/call')[before], 'the server to receive the call')
  // One call reached the server: the approval dispatched it once.
  expect(received(serverLog(transport), 'tools/call')).toHaveLength(before + 1)
  const key = String(call.message.params?._meta?.[MCP_IDEMPOTENCY_META])
  if (tool === 'deliver_task')
    // The client holds the task's id once it polls it (a Stop before that could not name the task).
    await pollFor(() => received(serverLog(transport), 'tasks/get').length > 0 || undefined, 'the task to be polled')
  await expect(other.lastAnswer().getByTestId('tool-call-state')).toHaveText('Running…')
  return { chat, other, requestId: call.message.id!, key }
}

/** Waits until `probe` returns something (the server's log is not a page: expect.poll over it). */
async function pollFor<T>(probe: () => T | undefined, what: string): Promise<T> {
  let found: T | undefined
  await expect.poll(() => (found = probe()) !== undefined, { message: what, timeout: 20_000 }).toBe(true)
  return found!
}

/** The server has this request's cancellation, in its transport's own form. */
async function cancellationArrived(transport: Transport, requestId: string | number): Promise<void> {
  if (transport === 'http') {
    await pollFor(() => serverLog('http').find((e) => e.type === 'stream-closed' && e.ids.includes(requestId)), 'the call’s response stream closed')
  } else {
    await pollFor(
      () => received(serverLog('stdio'), 'notifications/cancelled').find((e) => e.message.params?.requestId === requestId),
      'notifications/cancelled naming the request id',
    )
  }
}

/** The call's state in both tabs, then in the first after a reload. */
async function everywhere(inFlight: InFlight, label: string | RegExp, check: (state: Locator) => Promise<void> = async () => {}) {
  for (const page of [inFlight.chat, inFlight.other]) {
    const state = page.lastAnswer().getByTestId('tool-call-state')
    await expect(state).toHaveText(label)
    await check(state)
  }
  await inFlight.chat.page.reload()
  const state = inFlight.chat.lastAnswer().getByTestId('tool-call-state')
  await expect(state).toHaveText(label)
  await check(state)
}

const writesOf = (transport: Transport, key: string) => serverLog(transport).filter((e) => e.type === 'write' && e.key === key)
const honoured = (transport: Transport, requestId: string | number) =>
  serverLog(transport).some((e) => e.type === 'cancelled-honoured' && e.requestId === requestId)

for (const transport of ['http', 'stdio'] as const) {
  test.describe(`Stop mid-MCP-call over ${transport}`, () => {
    test('a destructive call that honours the cancellation: nothing written; it "May have happened" (MCP cannot be asked)', async ({ browser }) => {
      const inFlight = await callInFlight(browser, transport, 'deliver', { message: `ship it over ${transport}` })
      await inFlight.chat.stop()
      await cancellationArrived(transport, inFlight.requestId)
      await pollFor(() => honoured(transport, inFlight.requestId) || undefined, 'the tool to honour the cancellation')
      await everywhere(inFlight, 'May have happened')
      expect(writesOf(transport, inFlight.key)).toHaveLength(0)
      await inFlight.chat.page.context().close()
    })

    test('a task: `tasks/cancel` reaches the server and its own word (cancelled) shows "Stopped — did not happen"', async ({ browser }) => {
      const inFlight = await callInFlight(browser, transport, 'deliver_task', { message: `task over ${transport}` })
      await inFlight.chat.stop()
      const created = serverLog(transport).find((e) => e.type === 'task-created' && e.key === inFlight.key)
      expect(created).toBeDefined()
      const taskId = (created as Extract<McpLogEntry, { type: 'task-created' }>).taskId
      await pollFor(
        () => received(serverLog(transport), 'tasks/cancel').find((e) => (e.message.params as { taskId?: string } | undefined)?.taskId === taskId),
        'tasks/cancel naming the task',
      )
      await pollFor(() => serverLog(transport).find((e) => e.type === 'task-cancelled' && e.taskId === taskId), 'the task to end cancelled')
      await everywhere(inFlight, 'Stopped — did not happen')
      expect(writesOf(transport, inFlight.key)).toHaveLength(0)
      await inFlight.chat.page.context().close()
    })

    test('a read-only call (no approval): the cancellation arrives and it is "Stopped — did not happen"', async ({ browser }) => {
      const inFlight = await callInFlight(browser, transport, 'lookup_writes', { limit: 3 })
      await inFlight.chat.stop()
      await cancellationArrived(transport, inFlight.requestId)
      await pollFor(() => honoured(transport, inFlight.requestId) || undefined, 'the read to stop')
      await everywhere(inFlight, 'Stopped — did not happen')
      await inFlight.chat.page.context().close()
    })

    test('a tool that ignores the cancellation and writes anyway: never "did not happen"', async ({ browser }) => {
      const inFlight = await callInFlight(browser, transport, 'deliver_stubborn', { message: `stubborn over ${transport}` })
      await inFlight.chat.stop()
      await cancellationArrived(transport, inFlight.requestId)
      await expect(inFlight.chat.lastAnswer().getByTestId('tool-call-state')).toHaveText('May have happened')
      // It did happen: the server wrote it after the Stop. The page never claimed otherwise.
      await pollFor(() => writesOf(transport, inFlight.key)[0], 'the stubborn write')
      expect(honoured(transport, inFlight.requestId)).toBe(false)
      await everywhere(inFlight, 'May have happened', async (state) => expect(state).not.toHaveText(/did not happen/))
      await inFlight.chat.page.context().close()
    })
  })
}
