/**
 * Takes the README's screenshots of the running app (offline model): mid-stream and
 * after Stop, light and dark. Start the app first (`npm run build && npm start`, or
 * `npm run dev`), then: `npx tsx scripts/screenshots.ts [baseURL]`.
 */
import { chromium } from '@playwright/test'
import { chromiumLaunchOptions } from '../e2e/chromium'

const base = process.argv[2] ?? 'http://127.0.0.1:3000'
const browser = await chromium.launch(chromiumLaunchOptions)
for (const scheme of ['light', 'dark'] as const) {
  const page = await browser.newPage({ viewport: { width: 1200, height: 760 }, colorScheme: scheme })
  await page.goto(base)
  await page.getByTestId('composer-input').fill('How should an AI chat handle the Stop button?')
  await page.getByTestId('send-button').click()
  const answer = page.getByTestId('message-assistant').last()
  await answer.getByTestId('answer-text').waitFor()
  await page.waitForFunction(() => ((document.querySelector('[data-testid="answer-text"]') as HTMLElement | null)?.innerText.length ?? 0) > 380)
  await page.screenshot({ path: `docs/streaming-${scheme}.png` })
  await page.getByTestId('stop-button').click()
  await page.waitForSelector('[data-testid="stopped-marker"]')
  await page.screenshot({ path: `docs/stopped-${scheme}.png` })
  await page.close()
}
await browser.close()
console.log('screenshots written to docs/')
