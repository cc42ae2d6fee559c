import { defineConfig } from '@playwright/test'
import { chromiumLaunchOptions } from './e2e/chromium'

/**
 * Chaos (real processes on Postgres): app instances (`next start` on the build in
 * A2_NEXT_DIST_DIR, default `.next-chaos`), standalone workers and, for one spec, a throwaway
 * Postgres cluster, started and killed by the specs themselves — no webServer here.
 *
 *   A2_NEXT_DIST_DIR=.next-chaos NEXT_TELEMETRY_DISABLED=1 npx next build
 *   TEST_DATABASE_URL=postgres://… npx playwright test -c playwright.chaos.config.ts
 *
 * The specs are named `*.chaos.ts` so the main config (testDir ./e2e, default testMatch)
 * never picks them up. Without TEST_DATABASE_URL every spec is skipped with the reason.
 */
export default defineConfig({
  testDir: './e2e/chaos',
  testMatch: '**/*.chaos.ts',
  timeout: 150_000,
  expect: { timeout: 15_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: [['list']],
  outputDir: 'test-results/chaos',
  use: {
    screenshot: 'only-on-failure',
    trace: 'off',
    launchOptions: chromiumLaunchOptions,
  },
})
