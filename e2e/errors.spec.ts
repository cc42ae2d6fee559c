/**
 * Errors a person can act on: the model failing says why and offers a Retry that works; a
 * rate limit (429) says so in plain words and when to try again (Retry-After), and Retry
 * works once that time has passed.
 */
import { expect, test, type Page } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { nonce } from './helpers/upstream'

/** Every POST to `url` answered as the app's rate limits answer (429, Retry-After in seconds); other methods go through. */
function refusePosts(page: Page, url: string, retryAfterS: number, message: string, details?: unknown) {
  return page.route(url, (route) =>
    route.request().method() === 'POST'
      ? route.fulfill({
          status: 429,
          headers: { 'retry-after': String(retryAfterS), 'content-type': 'application/json' },
          body: JSON.stringify({ error: { code: 'rate_limited', message, ...(details ? { details } : {}) } }),
        })
      : route.continue(),
  )
}

test('an upstream model error shows the reason, and Retry gets an answer', async ({ page }) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  // The test upstream refuses this exact prompt three times (every attempt of the run), then answers.
  await chat.send(`${nonce('model error')} [[fail 3]]`)
  await chat.waitForStatus('failed', { timeout: 30_000 })
  const failed = chat.lastAnswer()
  await expect(failed).toContainText('The answer couldn’t be completed.')
  await expect(failed).toContainText('overloaded')

  await failed.getByTestId('retry-button').click()
  await chat.waitForStreaming(5)
  await expect(chat.answers).toHaveCount(1) // the retry takes the failed answer's place
  await chat.stop()
  await chat.waitForStatus('stopped')
})

test('a 429 says which limit and when to try again; Retry counts down and works once that time has passed', async ({ page }) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  await refusePosts(page, '**/api/sessions/*/events', 4, 'too many requests: try again in 4 s', { retryAfterS: 4 })
  const text = nonce('rate limited')
  await chat.input.fill(text)
  await chat.sendButton.click()

  const alert = chat.errorAlert
  await expect(alert).toBeVisible({ timeout: 15_000 })
  await expect(alert).toHaveAttribute('data-code', 'rate_limited')
  // The server's words (which limit, and when), and a Retry that counts the wait down.
  await expect(alert).toContainText('too many requests: try again in 4 s')
  const retry = alert.getByRole('button', { name: /retry/i })
  await expect(retry).toBeDisabled()
  await expect(retry).toHaveText(/Retry in \d s/)

  await page.unroute('**/api/sessions/*/events')
  await expect(retry).toBeEnabled({ timeout: 10_000 })
  await retry.click()
  await expect(alert).toHaveCount(0)
  await expect(chat.userMessages.filter({ hasText: text })).toHaveCount(1)
  await chat.waitForStreaming(3)
  await chat.stop()
})

test('a 429 when starting a chat reads Retry-After, and Retry starts the chat once it has passed', async ({ page }) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  // The seconds come from the header only: the message names none.
  await refusePosts(page, '**/api/sessions', 3, 'slow down')
  await chat.input.fill(nonce('new chat rate limited'))
  await chat.sendButton.click()
  const alert = chat.errorAlert
  await expect(alert).toBeVisible()
  await expect(alert).toContainText(/try again in [1-3] seconds?/i)
  const retry = alert.getByRole('button', { name: /retry/i })
  await expect(retry).toBeDisabled()
  await page.unroute('**/api/sessions')
  await expect(retry).toBeEnabled({ timeout: 10_000 })
  await retry.click()
  await page.waitForURL(/\/c\/[^/]+$/)
  await chat.waitForStreaming(3)
  await chat.stop()
})

test('a new chat refused (429) says the message was not sent, keeps it in the box, and Retry starts the chat once the wait is over', async ({
  page,
}) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  await refusePosts(page, '**/api/sessions', 2, 'too many new chats: try again in 2 s')
  const text = nonce('first message refused')
  await chat.input.fill(text)
  await chat.input.press('Enter')

  const alert = chat.errorAlert
  await expect(alert).toBeVisible()
  // What happened to what the person typed, first; then the server's reason.
  await expect(alert).toContainText('Your message wasn’t sent.')
  await expect(alert).toContainText('too many new chats: try again in 2 s')
  await expect(chat.input).toHaveValue(text)

  await page.unroute('**/api/sessions')
  const retry = alert.getByRole('button', { name: /retry/i })
  await expect(retry).toBeEnabled({ timeout: 10_000 })
  await retry.click()
  await page.waitForURL(/\/c\//)
  await expect(chat.userTexts).toHaveText([text])
  await chat.waitForStreaming(3)
  await chat.stop()
})

test('a message that could not be sent goes back into the box at once, and Retry takes it from there into the conversation', async ({ page }) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  await chat.send(nonce('before the failure'))
  await chat.waitForText(3)
  await chat.stop()
  await refusePosts(page, '**/api/sessions/*/events', 2, 'too many requests: try again in 2 s')
  const text = nonce('refused in the chat')
  await chat.input.fill(text)
  await chat.input.press('Enter')

  await expect(chat.errorAlert).toContainText('Your message wasn’t sent.')
  // Not only in the alert's Dismiss: what was typed is back where it can be read and edited.
  await expect(chat.input).toHaveValue(text)
  await expect(chat.userTexts.filter({ hasText: text })).toHaveCount(0)

  await page.unroute('**/api/sessions/*/events')
  const retry = chat.errorAlert.getByRole('button', { name: /retry/i })
  await expect(retry).toBeEnabled({ timeout: 10_000 })
  await retry.click()
  await expect(chat.userTexts.filter({ hasText: text })).toHaveCount(1)
  await expect(chat.input).toHaveValue('')
  await chat.waitForStreaming(3)
  await chat.stop()
})
