/**
 * Compose files and copied .env files write `NAME=` for "not set". The built app (`next start`
 * on its own port) is started with every documented variable set empty, and a real browser asks it a question:
 * the built-in offline model answers it, streaming. Empty has to mean unset before any module
 * is imported, not only in lib/env.ts: `@ai-sdk/openai` reads OPENAI_BASE_URL when it loads and
 * throws on an empty one (issue 39 item 2), and another dependency may read another name.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { expect, test } from '@playwright/test'
import { ENV_VARIABLES } from '../lib/env'
import { ChatPage } from './pages/chat'
import { nonce } from './helpers/upstream'
import { freePort } from './helpers/free-port'

const ROOT = process.cwd()
/**
 * Set, not empty: AUTH_SECRET, which `next start` (production) requires (empty, the boot refuses
 * it by name: lib/env.test.ts); A2_DATA_DIR, whose empty value means `.data` in the checkout,
 * the dev server's database (that default is lib/env.test.ts's too), so this app gets its own.
 */
const SET = ['AUTH_SECRET', 'A2_DATA_DIR']
/** Read by dependencies when they load (node_modules/@ai-sdk/openai, better-auth): empty, each is unset too. */
const READ_BY_DEPENDENCIES = ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'BETTER_AUTH_URL', 'BETTER_AUTH_SECRET', 'BETTER_AUTH_TELEMETRY']

/** The variables README.md and docs/ name in backticks: each must be one lib/env.ts reads, so the list below cannot drift. */
function documentedVariables(): string[] {
  const text = ['README.md', 'docs/configuration.md', 'docs/deploying.md'].map((file) => readFileSync(path.join(ROOT, file), 'utf8')).join('\n')
  return [...new Set([...text.matchAll(/`((?:A2|OPENAI|OFFLINE)_[A-Z0-9_]*[A-Z0-9]|DATABASE_URL|AUTH_SECRET|TEST_DATABASE_URL)`/g)].map((m) => m[1]))]
}

let app: ChildProcess | undefined
let base = ''
let log = ''
let dataDir = ''

test.beforeAll(async () => {
  test.setTimeout(240_000)
  const documented = documentedVariables()
  expect(
    documented.filter((name) => name !== 'TEST_DATABASE_URL' && !(ENV_VARIABLES as readonly string[]).includes(name)),
    'documented but not read by lib/env.ts',
  ).toEqual([])
  const empty = Object.fromEntries(
    [...new Set([...ENV_VARIABLES, ...documented, ...READ_BY_DEPENDENCIES])].filter((name) => !SET.includes(name)).map((name) => [name, '']),
  )
  const port = await freePort()
  base = `http://127.0.0.1:${port}`
  dataDir = mkdtempSync(path.join(tmpdir(), 'a2-empty-env-'))
  const child = spawn('npx', ['next', 'start', '-p', String(port), '-H', '127.0.0.1'], {
    detached: true, // its own process group: stopped as a whole below
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NEXT_TELEMETRY_DISABLED: '1',
      NEXT_MANUAL_SIG_HANDLE: 'true',
      AUTH_SECRET: 'empty-env-secret-0123456789abcdef0123456789',
      A2_DATA_DIR: dataDir,
      // The build this run made, wherever it put it (next.config.ts: A2_NEXT_DIST_DIR).
      ...(process.env.A2_NEXT_DIST_DIR ? { A2_NEXT_DIST_DIR: process.env.A2_NEXT_DIST_DIR } : {}),
      ...empty,
    } as unknown as NodeJS.ProcessEnv,
  })
  app = child
  child.stdout?.on('data', (chunk) => (log += chunk))
  child.stderr?.on('data', (chunk) => (log += chunk))
  await expect
    // An app that exited says why (its output), instead of the poll running out.
    .poll(
      async () =>
        child.exitCode !== null ? `exited ${child.exitCode}: ${log}` : (await fetch(`${base}/api/sessions`).catch(() => undefined))?.status,
      {
        timeout: 180_000,
      },
    )
    .toBe(200)
})

test.afterAll(async () => {
  if (app?.pid && app.exitCode === null) process.kill(-app.pid, 'SIGTERM')
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
})

test('with every documented variable set empty, the built app serves the offline model’s answer, streaming', async ({ page }) => {
  const chat = new ChatPage(page)
  await chat.goto(`${base}/`)
  const question = nonce('empty means unset')
  await chat.send(question)
  await chat.waitForStreaming(1)
  // The offline model restates the question it answers; an upstream at an empty base URL would answer nothing.
  await expect(chat.answers.last().getByTestId('answer-text')).toContainText(`"${question}"`)
  await chat.waitForStatus('done', { timeout: 60_000 })
  expect(log).not.toMatch(/instrumentation hook|baseURL must be|cannot start/)
})
