/**
 * A tool call that needs approval, in Chromium, against the built app started here with one MCP
 * server (scripts/mcp-test-server.ts over Streamable HTTP, in this process) configured the way an
 * operator does (`A2_MCP_SERVERS`), and a real upstream that calls its destructive `deliver` tool.
 * A call started on a laptop waits (it survives a reload) and is approved on a phone-sized second
 * context of the same account, which the laptop sees run once; another is stopped while it waits
 * and never runs. The server's own log is the evidence of a dispatch; axe checks the waiting page.
 */
import { expect, test, type Browser, type BrowserContext } from '@playwright/test'
import { startMcpTestServer, type McpTestServer } from '../scripts/mcp-test-server'
import { startUpstream, type Upstream } from '../scripts/upstream-server'
import { ChatPage } from './pages/chat'
import { seriousViolations } from './helpers/axe'
import { startMcpApp, type McpApp } from './helpers/mcp-app'

let app: McpApp | undefined
let mcp: McpTestServer
let upstream: Upstream
let base = ''

test.beforeAll(async () => {
  test.setTimeout(240_000)
  mcp = await startMcpTestServer({ holdMs: 0 })
  upstream = await startUpstream({ tokenMs: 20, tokens: 30 })
  // The operator's configuration, as an MCP client's `mcpServers`; no `approval`: the default waits for a tool not marked read-only.
  app = await startMcpApp('approvals', { upstreamUrl: upstream.url, mcpServers: { team: { url: mcp.url } } })
  base = app.base
})

test.afterAll(async () => {
  await app?.close()
  await mcp?.close()
  await upstream?.close()
})

const writes = () => mcp.log.filter((e) => e.type === 'write')
const callsReceived = () => mcp.log.filter((e) => e.type === 'received' && e.message.method === 'tools/call')

/** A laptop-sized context, and a phone-sized one of the same account (the laptop's identity cookie). */
async function laptopAndPhone(browser: Browser): Promise<{ laptop: BrowserContext; phone: BrowserContext }> {
  const laptop = await browser.newContext({ baseURL: base, viewport: { width: 1280, height: 800 } })
  const page = new ChatPage(await laptop.newPage())
  await page.goto('/')
  await page.waitForIdentity()
  const phone = await browser.newContext({
    baseURL: base,
    storageState: await laptop.storageState(),
    viewport: { width: 390, height: 844 },
    hasTouch: true,
    isMobile: true,
  })
  return { laptop, phone }
}

test('a call started on a laptop waits, survives a reload, and is approved on a phone: it runs once', async ({ browser }) => {
  const { laptop, phone } = await laptopAndPhone(browser)
  const chat = new ChatPage(laptop.pages()[0])
  const message = 'the release is out, with notes and a link to the changelog for everyone on the team'
  await chat.send(`Tell the team [[call team__deliver ${JSON.stringify({ message })}]]`)
  const call = chat.lastAnswer().getByTestId('tool-call')
  await expect(call.getByTestId('tool-call-state')).toHaveText('Waiting for your approval')
  // The tool, its server and its full arguments, never truncated.
  await expect(call).toContainText('team__deliver')
  await expect(call.getByTestId('tool-approval-server')).toHaveText('team')
  await expect(call.getByTestId('tool-call-input')).toHaveText(JSON.stringify({ message }))
  expect(await seriousViolations(chat.page)).toEqual([])
  // The wait is in the log: a reload shows it again, and nothing reached the server.
  await chat.page.reload()
  await expect(chat.lastAnswer().getByTestId('tool-call-state')).toHaveText('Waiting for your approval')
  expect(callsReceived()).toHaveLength(0)

  const onPhone = new ChatPage(await phone.newPage())
  await onPhone.goto(new URL(chat.page.url()).pathname)
  const phoneCall = onPhone.lastAnswer().getByTestId('tool-call')
  await expect(phoneCall.getByTestId('tool-call-state')).toHaveText('Waiting for your approval')
  await expect(phoneCall.getByTestId('tool-call-input')).toHaveText(JSON.stringify({ message }))
  expect(await seriousViolations(onPhone.page)).toEqual([])
  await phoneCall.getByTestId('tool-approve').click()

  // The laptop sees it run and the answer go on; the buttons are gone everywhere.
  await expect(call.getByTestId('tool-call-state')).toHaveText('Done', { timeout: 30_000 })
  await chat.waitForStatus('done', { timeout: 30_000 })
  await expect(chat.page.getByTestId('tool-approve')).toHaveCount(0)
  await expect(phoneCall.getByTestId('tool-call-state')).toHaveText('Done')
  expect(writes()).toHaveLength(1)
  expect(callsReceived()).toHaveLength(1)
  await laptop.close()
  await phone.close()
})

test('a call stopped while it waits is "Not started" and never runs', async ({ browser }) => {
  const { laptop, phone } = await laptopAndPhone(browser)
  const chat = new ChatPage(laptop.pages()[0])
  const before = callsReceived().length
  await chat.send(`Send it [[call team__deliver ${JSON.stringify({ message: 'do not send this one' })}]]`)
  const call = chat.lastAnswer().getByTestId('tool-call')
  await expect(call.getByTestId('tool-call-state')).toHaveText('Waiting for your approval')
  await chat.stop()
  await expect(call.getByTestId('tool-call-state')).toHaveText('Not started')
  await expect(call.getByTestId('tool-approve')).toHaveCount(0)
  // After reload too, and on the phone: the Stop ended the wait for every tab.
  await chat.page.reload()
  await expect(chat.lastAnswer().getByTestId('tool-call-state')).toHaveText('Not started')
  const onPhone = new ChatPage(await phone.newPage())
  await onPhone.goto(new URL(chat.page.url()).pathname)
  await expect(onPhone.lastAnswer().getByTestId('tool-call-state')).toHaveText('Not started')
  await expect(onPhone.page.getByTestId('tool-approve')).toHaveCount(0)
  expect(callsReceived()).toHaveLength(before)
  await laptop.close()
  await phone.close()
})
