import { defineConfig } from '@playwright/test'
import { chromiumLaunchOptions } from './e2e/chromium'
import { E2E_LIMITS } from './e2e/limits'

/**
 * End to end against the built app (`next start`) and a real upstream speaking OpenAI
 * chat-completions SSE, in Debian's Chromium. The app's database: a fresh Postgres
 * database when TEST_DATABASE_URL is set, else PGlite in a throwaway directory.
 */
// Overridable so two checkouts on one machine can run their suites side by side.
const APP_PORT = Number(process.env.E2E_APP_PORT || 3100)
const UPSTREAM_PORT = Number(process.env.E2E_UPSTREAM_PORT || 4110)
/** The sendWebhook tool's receiver (scripts/webhook-receiver.ts): beside the upstream's port by default. */
const WEBHOOK_PORT = Number(process.env.E2E_WEBHOOK_PORT || UPSTREAM_PORT + 1)
const dataDir = `/tmp/a2-e2e-${process.pid}`

/** The app's models in the suite: id (also the name sent upstream) and label. */
export const E2E_MODELS = [
  { id: 'upstream-e2e', label: 'openai/upstream-e2e' },
  { id: 'upstream-e2e-b', label: 'Upstream B' },
]

export default defineConfig({
  testDir: './e2e',
  // The chaos suite manages its own processes: playwright.chaos.config.ts.
  testIgnore: ['**/chaos/**'],
  timeout: 60_000,
  expect: { timeout: 15_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: [['list']],
  outputDir: 'test-results',
  use: {
    baseURL: `http://127.0.0.1:${APP_PORT}`,
    screenshot: 'only-on-failure',
    trace: 'off',
    launchOptions: chromiumLaunchOptions,
  },
  webServer: [
    {
      command: `npx tsx scripts/upstream-server.ts`,
      env: { PORT: String(UPSTREAM_PORT), UPSTREAM_TOKEN_MS: '60', UPSTREAM_TOKENS: '400' },
      url: `http://127.0.0.1:${UPSTREAM_PORT}/__requests`,
      reuseExistingServer: false,
      timeout: 30_000,
    },
    {
      command: `npx tsx scripts/webhook-receiver.ts`,
      // 30 s per delivery: a Stop lands while the call is in flight.
      env: { PORT: String(WEBHOOK_PORT), WEBHOOK_HOLD_MS: '30000' },
      url: `http://127.0.0.1:${WEBHOOK_PORT}/__received`,
      reuseExistingServer: false,
      timeout: 30_000,
    },
    {
      command: `npx next start -p ${APP_PORT} -H 127.0.0.1`,
      env: {
        NEXT_MANUAL_SIG_HANDLE: 'true',
        A2_DATA_DIR: dataDir,
        ...(process.env.E2E_DATABASE_URL ? { DATABASE_URL: process.env.E2E_DATABASE_URL } : {}),
        // Two models on the one upstream, told apart by the name each request sends (models.spec.ts); the first is the default.
        A2_MODELS: JSON.stringify(
          E2E_MODELS.map((m) => ({
            ...m,
            provider: 'openai',
            baseURL: `http://127.0.0.1:${UPSTREAM_PORT}/v1`,
            apiKey: 'e2e',
            reasoning: false,
            tools: true,
          })),
        ),
        A2_WEBHOOK_URL: `http://127.0.0.1:${WEBHOOK_PORT}/hook`,
        // `next start` is production: the secret is required (one fixed for the suite).
        AUTH_SECRET: 'e2e-suite-secret-0123456789abcdef0123456789',
        // Every spec comes from 127.0.0.1 and makes many identities: limits far above what the suite uses.
        ...E2E_LIMITS,
      },
      url: `http://127.0.0.1:${APP_PORT}/api/sessions`,
      reuseExistingServer: false,
      timeout: 120_000,
      stdout: 'pipe',
    },
  ],
})

export const UPSTREAM_URL = `http://127.0.0.1:${UPSTREAM_PORT}`
export const WEBHOOK_URL = `http://127.0.0.1:${WEBHOOK_PORT}`
