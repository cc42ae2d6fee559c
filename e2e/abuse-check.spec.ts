/**
 * Issue 14's "done when", black-box: scripts/abuse-check.ts against a built app of its own
 * (`next start` on the same build, PGlite, its own limits), from one address with no
 * cookies. Its own instance, because the main suite's app runs with limits far above what
 * the suite uses from 127.0.0.1, and this check needs a fresh minute of a low limit.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { expect, test } from '@playwright/test'
import { abuseCheck, limitsFromEnv } from '../scripts/abuse-check'
import { ChatPage } from './pages/chat'
import { freePort } from './helpers/free-port'

const LIMITS = {
  A2_RATE_GENERATIONS_PER_MIN_PER_ADDRESS: '5',
  A2_RATE_IDENTITIES_PER_MIN_PER_ADDRESS: '100',
  A2_MAX_SESSIONS_PER_USER: '4',
  A2_MAX_PUSHED_BYTES_PER_SESSION: '40000',
  A2_MAX_TAILS_PER_USER: '3',
  A2_BODY_TIMEOUT_MS: '1500',
}

let app: ChildProcess | undefined
let base = ''

test.beforeAll(async () => {
  test.setTimeout(120_000)
  const port = await freePort()
  base = `http://127.0.0.1:${port}`
  const child = spawn('npx', ['next', 'start', '-p', String(port), '-H', '127.0.0.1'], {
    detached: true, // its own process group: stopped as a whole below
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NEXT_TELEMETRY_DISABLED: '1',
      NEXT_MANUAL_SIG_HANDLE: 'true',
      A2_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'a2-abuse-check-')),
      AUTH_SECRET: 'abuse-check-secret-0123456789abcdef01234567',
      A2_EMBEDDED_WORKER: '0', // generations are admitted and queued; running them is not the point
      A2_OPERATOR_TOKEN: 'abuse-check-operator-token-0123456789abcdef',
      // The build this run made, wherever it put it (next.config.ts: A2_NEXT_DIST_DIR).
      ...(process.env.A2_NEXT_DIST_DIR ? { A2_NEXT_DIST_DIR: process.env.A2_NEXT_DIST_DIR } : {}),
      ...LIMITS,
    } as unknown as NodeJS.ProcessEnv,
  })
  app = child
  let log = ''
  child.stdout?.on('data', (chunk) => (log += chunk))
  child.stderr?.on('data', (chunk) => (log += chunk))
  await expect
    .poll(async () => (await fetch(`${base}/`).catch(() => undefined))?.status, { timeout: 90_000, message: `the app did not start:\n${log}` })
    .toBe(200)
})

test.afterAll(async () => {
  if (app?.pid) process.kill(-app.pid, 'SIGTERM')
})

test('one address with no cookies: limits hold, hostile requests are 4xx with nothing written, headers are on, operator routes are closed', async () => {
  test.setTimeout(120_000)
  const checks = await abuseCheck(base, limitsFromEnv(LIMITS))
  const failed = checks.filter((c) => !c.ok)
  console.log(checks.map((c) => `${c.ok ? 'ok  ' : 'FAIL'} ${c.name} — ${c.detail}`).join('\n'))
  expect(failed, failed.map((c) => `${c.name}: ${c.detail}`).join('\n')).toEqual([])
  expect(checks.length).toBeGreaterThan(40)
})

test('the page says plainly when a limit bites', async ({ page }) => {
  // The check above spent this address's generations for the minute: the next question is refused.
  await page.goto(`${base}/`)
  const chat = new ChatPage(page)
  await chat.input.waitFor({ state: 'visible' })
  await chat.input.fill('one question too many')
  await chat.sendButton.click()
  await expect(chat.errorAlert).toBeVisible({ timeout: 20_000 })
  await expect(chat.errorAlert).toHaveAttribute('data-code', 'rate_limited')
  await expect(chat.errorAlert).toContainText(/too many answers requested from your address this minute: try again in \d+ s/)
  await page.screenshot({ path: 'test-results/rate-limited.png' })
})
