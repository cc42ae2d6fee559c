/**
 * A read-only link in real Chromium: a browser with no identity opens it and watches the
 * answer stream; the owner's Stop cuts it there exactly as for the owner; the viewer can write
 * nothing; revoking the link ends the viewer's live view within a second or two. Export gives
 * the conversation as Markdown.
 */
import { expect, test } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { nonce } from './helpers/upstream'

test('a shared link streams the chat live, read only; the owner’s Stop cuts it there too; revoking ends it', async ({ page, browser }) => {
  const owner = new ChatPage(page)
  await owner.goto('/')
  const prompt = nonce('shared')
  await owner.send(prompt)
  await owner.waitForStreaming(20)
  const answerId = await owner.lastAnswerId()

  await page.getByTestId('share-button').click()
  await page.getByTestId('share-create').click()
  const link = await page.getByTestId('share-link').inputValue()
  expect(link).toMatch(/\/s\/[A-Za-z0-9_-]{43}$/)

  const viewerContext = await browser.newContext()
  const viewer = await viewerContext.newPage()
  await viewer.goto(link)
  const shared = new ChatPage(viewer)
  await expect(shared.userTexts).toHaveText([prompt])
  await expect(shared.answer(answerId)).toHaveAttribute('data-status', 'streaming')
  const start = (await shared.answerText(answerId)).length
  await expect.poll(async () => (await shared.answerText(answerId)).length).toBeGreaterThan(start + 10)
  await expect(viewer.getByTestId('composer-input')).toHaveCount(0)
  await expect(viewer.getByRole('button', { name: /edit/i })).toHaveCount(0)

  const shown = await owner.stopAndReadShown()
  await expect(owner.answer(answerId)).toHaveAttribute('data-ended', 'cancelled')
  await expect(shared.answer(answerId)).toHaveAttribute('data-ended', 'cancelled')
  expect(await shared.answerText(answerId)).toBe(shown)
  await expect(shared.answer(answerId).getByTestId('regenerate-button')).toHaveCount(0)
  // The viewer was never given an identity.
  expect((await viewerContext.cookies()).map((c) => c.name)).toEqual([])

  const markdown = await page.request.get(`/api/sessions/${owner.sessionId()}/export?format=markdown`)
  expect(await markdown.text()).toContain(shown)

  const title = (await viewer.getByTestId('shared-title').innerText()).trim()
  expect(title.length).toBeGreaterThan(0)
  await expect(viewer).toHaveTitle(`${title} · a2 chat`)
  await page.getByTestId('share-revoke').click()
  await expect(viewer.getByTestId('shared-gone')).toBeVisible({ timeout: 5_000 })
  // The chat's title goes with it, without a reload: the header and the tab no longer name it.
  await expect(viewer.getByTestId('shared-title')).toHaveText('')
  await expect(viewer).toHaveTitle('a2 chat')
  await viewer.reload()
  await expect(viewer.getByTestId('shared-gone')).toBeVisible()
  await viewerContext.close()
})
