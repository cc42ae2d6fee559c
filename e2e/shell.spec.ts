/**
 * The frame around the chat, as a keyboard and screen-reader user meets it: Esc closes the
 * topmost layer only, the drawer takes focus and gives it back, ids that cannot exist (or
 * are not yours) get the not-found page with a way home, unknown routes a branded 404, the
 * tab says which chat it is, the composer lines up with the conversation, and the reading
 * order and live region say what a sighted user sees.
 */
import { expect, test, type Page } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { nonce } from './helpers/upstream'

const insideSidebar = (page: Page) => page.evaluate(() => document.getElementById('sidebar')?.contains(document.activeElement) ?? false)

test.describe('on a phone', () => {
  test.use({ viewport: { width: 390, height: 844 } })

  test('Esc with the drawer open closes the drawer only; focus moves into the drawer, stays there, and comes back', async ({ page }) => {
    const chat = new ChatPage(page)
    await chat.goto('/')
    await chat.send(nonce('drawer'))
    await chat.waitForStreaming(5)

    const menu = page.getByRole('button', { name: 'Open sidebar' })
    const drawer = page.locator('#sidebar')
    await expect(drawer).toBeHidden()
    await menu.click()
    await expect(drawer).toBeVisible()
    await expect.poll(() => insideSidebar(page), { message: 'focus moves into the drawer' }).toBe(true)

    // Tab and Shift+Tab cycle inside the open drawer: nothing behind the overlay takes focus.
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab')
      expect(await insideSidebar(page), `after Tab #${i + 1}`).toBe(true)
    }
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press('Shift+Tab')
      expect(await insideSidebar(page), `after Shift+Tab #${i + 1}`).toBe(true)
    }

    await page.keyboard.press('Escape')
    await expect(drawer).toBeHidden()
    await expect(menu).toBeFocused()
    // The answer is still being written: that Esc belonged to the drawer.
    await expect(chat.stopButton).toBeVisible()
    expect(await chat.lastAnswerStatus()).toBe('streaming')

    // With no layer open, Esc stops the answer.
    await page.keyboard.press('Escape')
    await chat.waitForStatus('stopped')
  })
})

async function expectNotFoundPage(page: Page) {
  const notFound = page.getByTestId('chat-not-found')
  await expect(notFound).toBeVisible()
  await expect(notFound.getByRole('heading')).toHaveText(/isn’t available|not found/i)
  // Nothing to type into, no skeleton that never resolves, no Retry that cannot succeed.
  await expect(page.getByTestId('composer-input')).toHaveCount(0)
  await expect(page.getByLabel('Loading the conversation')).toHaveCount(0)
  await expect(page.getByRole('button', { name: 'Retry' })).toHaveCount(0)
  // The header does not pretend this is a new chat.
  await expect(page.getByTestId('chat-title')).not.toHaveText('New chat')
  // A way home.
  await notFound.getByRole('link', { name: 'Start a new chat' }).click()
  await page.waitForURL((url) => url.pathname === '/')
  await expect(page.getByTestId('composer-input')).toBeVisible()
}

test('a malformed chat id shows the not-found page with a way home', async ({ page }) => {
  const response = await page.goto('/c/not-a-real-id')
  expect(response?.status()).toBe(404)
  await expectNotFoundPage(page)
})

test('an unknown chat id shows the same not-found page, and the header does not say "New chat"', async ({ page }) => {
  await page.goto('/') // an identity first, so this is "not yours", not "no identity"
  await page.getByTestId('composer-input').waitFor()
  await page.goto('/c/00000000-0000-4000-8000-000000000000')
  await expectNotFoundPage(page)
})

for (const path of ['/no/such/page', '/c/00000000-0000-4000-8000-000000000000/extra'])
  test(`an unknown route gets the branded 404 with a way home (${path})`, async ({ page }) => {
    const response = await page.goto(path)
    expect(response?.status()).toBe(404)
    await expect(page.getByTestId('not-found')).toBeVisible()
    await expect(page.getByText('a2 chat').first()).toBeVisible()
    await expect(page.getByRole('main')).toHaveCount(1)
    await expect(page).toHaveTitle(/not found/i)
    await page.getByTestId('not-found').getByRole('link', { name: 'Start a new chat' }).click()
    await page.waitForURL((url) => url.pathname === '/')
  })

test('the tab title is the chat’s title, and follows navigation', async ({ page }) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  await expect(page).toHaveTitle('a2 chat')
  const prompt = nonce('Tab title check')
  await chat.send(prompt)
  // The server titles the chat from its first message.
  await expect(page).toHaveTitle(new RegExp(`^Tab title check.*· a2 chat$`))
  await chat.stop()
  await chat.newChat()
  await expect(page).toHaveTitle('a2 chat')
  await page.goBack()
  await expect(page).toHaveTitle(new RegExp(`^Tab title check.*· a2 chat$`))
  // Pages outside the chat keep their own titles.
  await page.getByRole('link', { name: 'Runs', exact: true }).click()
  await page.waitForURL('**/runs')
  await expect(page).toHaveTitle('Runs · a2 chat')
  await page.goBack()
  await expect(page).toHaveTitle(new RegExp(`^Tab title check.*· a2 chat$`))
  await page.getByRole('link', { name: 'Saved notes' }).click()
  await page.waitForURL('**/notes')
  await expect(page).toHaveTitle('a2 chat')
})

test.describe('at 1280×800', () => {
  test.use({ viewport: { width: 1280, height: 800 } })

  test('the composer is as wide as the conversation, on "/" and in the chat, so the first send does not jump', async ({ page }) => {
    const chat = new ChatPage(page)
    await chat.goto('/')
    const composer = page.getByRole('form', { name: 'Send a message' })
    const onHome = (await composer.boundingBox())!
    await chat.send(nonce('width'))
    await chat.waitForStreaming(1)
    const inChat = (await composer.boundingBox())!
    const column = (await page.getByRole('list', { name: 'Conversation' }).boundingBox())!
    expect(inChat.width).toBe(column.width)
    expect(inChat.x).toBe(column.x)
    expect(onHome.width).toBe(inChat.width)
    expect(onHome.x).toBe(inChat.x)
    await chat.stop()
  })

  test('finished turns sit close together: a hidden action bar leaves no large gap', async ({ page }) => {
    const chat = new ChatPage(page)
    await chat.goto('/')
    await chat.send(nonce('gap-1'))
    await chat.waitForText(20)
    await chat.stop()
    await chat.send(nonce('gap-2'))
    await chat.waitForText(20)
    await chat.stop()
    // Between the first answer's last line and the next message: the spacing between turns, no more.
    const gap = await page.evaluate(() => {
      const answer = document.querySelectorAll('[data-testid="message-assistant"]')[0]
      const text = answer.querySelector('[data-testid="answer-text"]')!.getBoundingClientRect()
      const marker = answer.querySelector('[data-testid="stopped-marker"]')?.getBoundingClientRect()
      const next = document.querySelectorAll('[data-testid="message-user"]')[1].getBoundingClientRect()
      return next.top - Math.max(text.bottom, marker?.bottom ?? 0)
    })
    expect(gap).toBeLessThanOrEqual(48)
    // …and between a message and its answer: a hidden Copy/Edit row takes no room either.
    const userGap = await page.evaluate(() => {
      const bubble = document.querySelectorAll('[data-testid="message-user"]')[0].firstElementChild!.getBoundingClientRect()
      const answer = document.querySelectorAll('[data-testid="message-assistant"]')[0].getBoundingClientRect()
      return answer.top - bubble.bottom
    })
    expect(userGap).toBeLessThanOrEqual(48)
  })
})

test('a user message reads text first, then Copy and Edit; "Stopped" is announced from the live region', async ({ page }) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  const prompt = nonce('reading order')
  await chat.send(prompt)
  await chat.waitForText(10)
  await chat.stop()

  const order = await chat.userMessages.first().evaluate((article, text) => {
    const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT | NodeFilter.SHOW_ELEMENT)
    const seen: string[] = []
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.nodeType === Node.TEXT_NODE && node.textContent?.includes(text)) seen.push('text')
      if (node instanceof HTMLButtonElement) seen.push(node.getAttribute('aria-label') ?? '?')
    }
    return seen
  }, prompt)
  expect(order).toEqual(['text', 'Copy message', 'Edit message'])

  const marker = chat.lastAnswer().getByTestId('stopped-marker')
  await expect(marker).toBeVisible()
  const live = await marker.evaluate((el) => el.closest('[aria-live]')?.getAttribute('aria-live') ?? null)
  expect(live).toBe('polite')
  // The answer's text alone is still exactly what was shown: the marker is not part of it.
  expect(await chat.lastAnswerText()).not.toContain('Stopped')
})

test('a chat opened by link that is not on the first page of the list still shows its title', async ({ page }) => {
  await page.goto('/')
  await page.getByTestId('composer-input').waitFor()
  await new ChatPage(page).waitForIdentity()
  const title = nonce('An old chat')
  // As the page's own fetch would: JSON, from our origin (the CSRF check wants both).
  const headers = { origin: new URL(page.url()).origin }
  const old = await page.request.post('/api/sessions', { data: { title }, headers })
  expect(old.status()).toBe(201)
  const { session } = (await old.json()) as { session: { id: string } }
  // Fifty newer chats push it off the first page (50 a page).
  for (let i = 0; i < 50; i++) expect((await page.request.post('/api/sessions', { data: {}, headers })).status()).toBe(201)
  await page.goto(`/c/${session.id}`)
  await expect(page.getByTestId('chat-title')).toHaveText(title)
  await expect(page).toHaveTitle(`${title} · a2 chat`)
  await expect(page.locator(`[data-testid="session-item"][data-session-id="${session.id}"]`)).toHaveCount(0)
})
