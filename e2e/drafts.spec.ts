/**
 * What is typed and not sent is kept, per chat (and for the new-chat page), in the tab: going
 * to another chat and back, or reloading, does not lose it; sending it clears it.
 */
import { expect, test } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { Sidebar } from './pages/sidebar'
import { nonce } from './helpers/upstream'

test.use({ viewport: { width: 1280, height: 800 } })

test('a message typed and not sent survives going to another chat and back, and a reload; sending it clears it', async ({ page }) => {
  const chat = new ChatPage(page)
  const sidebar = new Sidebar(page)
  await chat.goto('/')
  await chat.send(nonce('drafts'))
  await chat.waitForText(3)
  await chat.stop()
  const id = chat.sessionId()!

  const draft = 'a long question I was still writing\nwith a second line'
  await chat.input.fill(draft)
  await chat.newChat()
  await expect(chat.input).toHaveValue('')
  const newDraft = nonce('started on the new-chat page')
  await chat.input.fill(newDraft)

  await sidebar.item(id).click()
  await page.waitForURL(new RegExp(`/c/${id}$`))
  await expect(chat.input).toHaveValue(draft)
  await page.reload()
  await expect(chat.input).toHaveValue(draft)

  await chat.newChat()
  await expect(chat.input).toHaveValue(newDraft)
  await chat.sendButton.click()
  await page.waitForURL(/\/c\/[^/]+$/)
  await chat.waitForText(3)
  await chat.stop()
  await chat.newChat()
  await expect(chat.input).toHaveValue('')

  await sidebar.item(id).click()
  await page.waitForURL(new RegExp(`/c/${id}$`))
  await expect(chat.input).toHaveValue(draft)
  await chat.sendButton.click()
  await expect(chat.userTexts.last()).toHaveText(draft)
  await expect(chat.input).toHaveValue('')
  await chat.stop()
  await page.reload()
  await expect(chat.userTexts.last()).toHaveText(draft)
  await expect(chat.input).toHaveValue('')
})

test('a new chat refused, then started with Retry: its message does not come back as the next new chat’s draft', async ({ page }) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  await page.route('**/api/sessions', (route) =>
    route.request().method() === 'POST'
      ? route.fulfill({
          status: 429,
          headers: { 'retry-after': '0', 'content-type': 'application/json' },
          body: JSON.stringify({ error: { code: 'rate_limited', message: 'too many new chats' } }),
        })
      : route.continue(),
  )
  const text = nonce('refused then retried')
  await chat.input.fill(text)
  await chat.input.press('Enter')
  await expect(chat.errorAlert).toBeVisible()
  await expect(chat.input).toHaveValue(text)

  await page.unroute('**/api/sessions')
  await chat.errorAlert.getByRole('button', { name: /retry/i }).click()
  await page.waitForURL(/\/c\//)
  await expect(chat.userTexts).toHaveText([text])
  await chat.waitForText(3)
  await chat.stop()
  await chat.newChat()
  await expect(chat.input).toHaveValue('')
})

test('text typed before the page hydrated is taken as it is: Send is enabled and sends it', async ({ page }) => {
  // The page's scripts (not its styles: those block the first paint) are held back, so the
  // server-rendered box is typed into before React runs.
  let releaseScripts!: () => void
  const scriptsHeld = new Promise<void>((resolve) => (releaseScripts = resolve))
  let held = 0
  await page.route(/\/_next\/static\/chunks\/.*\.js(\?|$)/, async (route) => {
    held++
    await scriptsHeld
    await route.continue()
  })
  await page.goto('/', { waitUntil: 'commit' })
  const chat = new ChatPage(page)
  await chat.input.waitFor()
  const typed = nonce('typed before hydration')
  await chat.input.pressSequentially(typed)
  expect(held, 'the scripts were held while typing').toBeGreaterThan(0)
  releaseScripts()
  await page.waitForLoadState('load')
  // Hydrated: the sidebar's list (a client fetch) has answered.
  await page.getByTestId('session-item').or(page.getByText('No chats yet')).first().waitFor()
  await expect(chat.input).toHaveValue(typed)
  await expect(chat.sendButton).toBeEnabled()
  await chat.sendButton.click()
  await expect(chat.userTexts.last()).toHaveText(typed)
})
