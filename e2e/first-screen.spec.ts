/**
 * The chat page carries its owner's conversation in its HTML (lib/chat/server/page-first-screen.ts):
 * shown before any script runs, hydrated without a mismatch, and then live (the tail opens after
 * the index the server folded). Nobody else's page carries it. A browser holding a Stop the
 * server has not acknowledged keeps the server's markup out of sight until it has applied the
 * Stop (components/chat/hold-if-pending.tsx): the first thing it shows is the cut.
 */
import { expect, test, type ConsoleMessage, type Page } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { installRecorder, recordedFor } from './helpers/recorder'
import { nonce } from './helpers/upstream'

/** React's own complaints (a hydration mismatch is reported as a recoverable error), kept as they come. */
function reactErrors(page: Page): string[] {
  const seen: string[] = []
  const keep = (text: string) => {
    if (/hydrat|react error|minified react/i.test(text)) seen.push(text)
  }
  page.on('console', (m: ConsoleMessage) => keep(m.text()))
  page.on('pageerror', (e) => keep(String(e)))
  return seen
}

/** A new chat whose answer is streaming, recorded from here on (installRecorder), with React's complaints kept. */
async function answerStreaming(page: Page, name: string): Promise<{ chat: ChatPage; answerId: string; errors: string[] }> {
  const errors = reactErrors(page)
  await installRecorder(page)
  const chat = new ChatPage(page)
  await chat.goto('/')
  await chat.send(nonce(name))
  await chat.waitForStreaming(40)
  return { chat, answerId: await chat.lastAnswerId(), errors }
}

/** After a reload: the answer is stopped at `shown`, the page is not held, and from its first paint it showed the cut and nothing else. */
async function expectOnlyTheCut(chat: ChatPage, answerId: string, shown: string, errors: string[]): Promise<void> {
  await expect(chat.answer(answerId)).toHaveAttribute('data-status', 'stopped')
  expect(await chat.answerText(answerId)).toBe(shown)
  await expect(chat.page.locator('html[data-held]')).toHaveCount(0)
  const history = await recordedFor(chat.page, answerId)
  expect(history.texts).toEqual([shown])
  expect(history.statuses).toEqual(['stopped'])
  expect(errors).toEqual([])
}

test('the owner’s chat is in the page’s HTML, hydrates without a mismatch and stays live; another browser’s page has none of it', async ({
  page,
  browser,
}) => {
  const errors = reactErrors(page)
  const chat = new ChatPage(page)
  const prompt = nonce('first-screen')
  await chat.goto('/')
  await chat.send(prompt)
  await chat.waitForStreaming(40)
  const shown = await chat.stopAndReadShown()
  const answerId = await chat.lastAnswerId()
  await expect(chat.answer(answerId)).toHaveAttribute('data-ended', 'cancelled')
  const path = `/c/${chat.sessionId()}`

  // Before any script: the same browser (its cookies) with JavaScript off sees the conversation.
  const noScript = await browser.newContext({ javaScriptEnabled: false, storageState: await page.context().storageState() })
  try {
    const bare = new ChatPage(await noScript.newPage())
    await bare.page.goto(path)
    await expect(bare.userTexts).toHaveText([prompt])
    await expect(bare.answer(answerId)).toHaveAttribute('data-status', 'stopped')
    expect(await bare.answerText(answerId)).toBe(shown)
  } finally {
    await noScript.close()
  }

  // With scripts: hydrated without a mismatch, showing the same, and live: a follow-up streams into it.
  await page.reload()
  await expect(chat.answer(answerId)).toHaveAttribute('data-status', 'stopped')
  expect(await chat.answerText(answerId)).toBe(shown)
  const next = nonce('after-first-screen')
  await chat.send(next)
  await chat.waitForStreaming(20)
  await expect(chat.answers).toHaveCount(2)
  await chat.stop()
  await chat.waitForStatus('stopped')
  expect(errors).toEqual([])

  // Another browser (an identity of its own) gets the page without the chat in it, and "not available".
  const stranger = await browser.newContext()
  try {
    const other = new ChatPage(await stranger.newPage())
    await other.goto('/')
    await other.waitForIdentity()
    const html = await (await other.page.request.get(path)).text()
    expect(html).not.toContain(prompt)
    expect(html).not.toContain(shown)
    await other.page.goto(path)
    await expect(other.notFound).toBeVisible()
  } finally {
    await stranger.close()
  }
})

test('a Stop this browser has not delivered keeps the server’s markup out of sight across a reload: the first answer shown is the cut', async ({
  page,
}) => {
  const { chat, answerId, errors } = await answerStreaming(page, 'held')

  // Pushes fail from here: the Stop stays in the browser's outbox while the server goes on writing.
  await page.route('**/api/sessions/*/events', (route) => (route.request().method() === 'POST' ? route.abort() : route.continue()))
  const shown = await chat.stopAndReadShown()
  await expect.poll(() => page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('a2.outbox:')).length)).toBe(1)
  // The server's answer is longer than the cut by now: what its HTML would paint.
  await expect.poll(async () => (await (await page.request.get(page.url())).text()).includes('data-status="streaming"')).toBe(true)

  await page.reload()
  await expectOnlyTheCut(chat, answerId, shown, errors)

  // Pushes get through again: the Stop is delivered, and the cut holds.
  await page.unroute('**/api/sessions/*/events')
  await expect(chat.answer(answerId)).toHaveAttribute('data-ended', 'cancelled', { timeout: 30_000 })
  expect(await chat.answerText(answerId)).toBe(shown)
})

test('a Stop acknowledged while the reload’s HTML was rendered without it: the reloaded page still shows only the cut', async ({ page }) => {
  const { chat, answerId, errors } = await answerStreaming(page, 'acked-before-reload')
  const path = new URL(page.url()).pathname

  // The order the race needs, made certain: the Stop's push waits until the server has rendered
  // the reloaded page (from the log without the Stop); then it lands, the old page hears so, and
  // only then does the new page's HTML reach the browser.
  let releaseStop!: () => void
  const stopMayGo = new Promise<void>((r) => (releaseStop = r))
  await page.route('**/api/sessions/*/events', async (route) => {
    if (route.request().method() !== 'POST') return route.continue()
    await stopMayGo
    await route.continue()
  })
  // What the old page writes to its outbox, told as it happens (a page navigating cannot be evaluated in).
  let oldPageAcknowledged!: Promise<void>
  {
    let resolve!: () => void
    oldPageAcknowledged = new Promise<void>((r) => (resolve = r))
    await page.exposeFunction('outboxWritten', (stored: string | null) => {
      if ((JSON.parse(stored ?? '[]') as Array<{ index: number }>).every((e) => e.index >= 0)) resolve()
    })
    await page.evaluate(() => {
      const tell = (key: string) =>
        key.startsWith('a2.outbox:') && (window as unknown as { outboxWritten(v: string | null): void }).outboxWritten(localStorage.getItem(key))
      const { setItem, removeItem } = Storage.prototype
      Storage.prototype.setItem = function (key, value) {
        setItem.call(this, key, value)
        tell(key)
      }
      Storage.prototype.removeItem = function (key) {
        removeItem.call(this, key)
        tell(key)
      }
    })
  }
  let rendered = false
  const thisPage = (url: URL) => url.pathname === path
  await page.route(thisPage, async (route) => {
    if (route.request().resourceType() !== 'document') return route.continue()
    const response = await route.fetch()
    rendered = true
    const acknowledged = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().includes('/events'))
    releaseStop()
    expect((await acknowledged).status()).toBe(201)
    // The old page took the answer: its outbox holds no intent still to send.
    await oldPageAcknowledged
    await route.fulfill({ response })
  })
  const shown = await chat.stopAndReloadAtOnce()
  expect(rendered).toBe(true)
  await page.unroute('**/api/sessions/*/events')
  await expect(chat.answer(answerId)).toHaveAttribute('data-ended', 'cancelled')
  await expectOnlyTheCut(chat, answerId, shown, errors)

  // A page rendered after the Stop landed is not held, and lets the kept Stop go.
  await page.unroute(thisPage)
  await page.reload()
  await expect(chat.answer(answerId)).toHaveAttribute('data-status', 'stopped')
  expect(await chat.answerText(answerId)).toBe(shown)
  await expect.poll(() => page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('a2.outbox:')).length)).toBe(0)
})

test('a chat opens at its latest turn before any script of the app has run', async ({ page, browser }) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  await chat.send(`${nonce('opens at the bottom')} [[markdown]]`)
  await chat.waitForStatus('done')
  await chat.send(`${nonce('and again')} [[markdown]]`)
  await chat.waitForStatus('done')
  const lastAnswer = await chat.lastAnswerId()

  // A phone-sized window, the app's scripts never arriving: what is on screen is the HTML and its inline scripts alone.
  const phone = await browser.newContext({ viewport: { width: 390, height: 600 }, storageState: await page.context().storageState() })
  try {
    const held = await phone.newPage()
    await held.route('**/_next/static/chunks/*.js', (route) => route.abort())
    await held.goto(`/c/${chat.sessionId()}`)
    const scroller = held.locator('[data-conversation-scroller]')
    await expect
      .poll(() =>
        scroller.evaluate((el) => ({
          scrolls: el.scrollHeight > el.clientHeight + 100,
          fromBottom: el.scrollHeight - el.scrollTop - el.clientHeight,
        })),
      )
      .toEqual({ scrolls: true, fromBottom: 0 })
    await expect(held.locator(`[data-answer-id="${lastAnswer}"] [data-testid="answer-tokens"]`)).toBeInViewport()
  } finally {
    await phone.close()
  }
})

test('finished answers come as the server rendered their Markdown: no Markdown module loads until the reader types, and a code block copies', async ({
  page,
  context,
}) => {
  const errors = reactErrors(page)
  await context.grantPermissions(['clipboard-read', 'clipboard-write'])
  const chat = new ChatPage(page)
  await chat.goto('/')
  await chat.send(`${nonce('markdown')} [[markdown]]`)
  await chat.waitForStatus('done')
  const answerId = await chat.lastAnswerId()

  // The Markdown module is the one script that carries react-markdown's option names.
  const markdownModules: string[] = []
  page.on('response', async (response) => {
    if (response.request().resourceType() !== 'script') return
    const body = await response.text().catch(() => '')
    if (body.includes('remarkRehypeOptions')) markdownModules.push(response.url())
  })
  await page.reload()
  const answer = chat.answer(answerId)
  await expect(answer.locator('table td', { hasText: 'the reader' })).toBeVisible()
  await expect(answer.locator('li strong', { hasText: 'question' })).toBeVisible()
  // Hydrated: the server's code block is live (its button copies the code).
  const copy = answer.getByRole('button', { name: 'Copy code' })
  await expect(async () => {
    await copy.click()
    await expect(answer.getByRole('button', { name: 'Copied' })).toBeVisible({ timeout: 500 })
  }).toPass()
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('const stop = { of, lastSeenIndex }')
  expect(markdownModules).toEqual([])

  // Typing a question loads it, ahead of the answer that will stream as Markdown.
  await chat.input.fill('and')
  await expect.poll(() => markdownModules.length).toBe(1)
  expect(errors).toEqual([])
})
