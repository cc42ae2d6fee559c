/**
 * A phone has no hover: what a mouse reveals on hover must show there without it. The
 * drawer's Rename and Delete, hover-revealed on a wide screen, show on every chat. And focus
 * in the composer opens the on-screen keyboard: Stop and Regenerate leave focus on the answer,
 * an edit sent on its message, and a chat opened to be read leaves the composer alone.
 */
import { expect, test } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { Sidebar } from './pages/sidebar'
import { nonce } from './helpers/upstream'

test.use({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true })

test('in the phone drawer every chat shows its Rename and Delete, not only the open one', async ({ page }) => {
  const chat = new ChatPage(page)
  const ids: string[] = []
  for (const text of [nonce('phone first'), nonce('phone second')]) {
    await chat.goto('/')
    await chat.send(text)
    await chat.waitForText(3)
    await chat.stop()
    ids.push(chat.sessionId()!)
  }

  // Closed, the drawer's contents are not even laid out (the page's first layout on a phone); open, they are.
  const drawer = page.locator('#sidebar')
  await expect(drawer).toHaveCSS('content-visibility', 'hidden')
  await page.getByRole('button', { name: 'Open sidebar' }).tap()
  await expect(drawer).toHaveCSS('content-visibility', 'visible')
  const sidebar = new Sidebar(page)
  for (const id of ids) {
    const row = page.locator('li', { has: sidebar.item(id) })
    await expect(row.getByRole('button', { name: /^Rename/ })).toHaveCSS('opacity', '1')
    await expect(row.getByTestId('delete-chat')).toHaveCSS('opacity', '1')
  }
  // And they work by touch: Delete on the chat that is not open.
  await page
    .locator('li', { has: sidebar.item(ids[0]) })
    .getByTestId('delete-chat')
    .tap()
  await expect(sidebar.item(ids[0])).toHaveCount(0)
  await expect(sidebar.undoToast).toBeVisible()
})

/** The element that has focus: which answer it is, or the composer, or <body>. */
function focused(page: import('@playwright/test').Page) {
  return page.evaluate(() => {
    const el = document.activeElement
    if (!el || el === document.body) return 'body'
    if (el.id === 'composer-input') return 'composer'
    const answer = el.closest('[data-testid="message-assistant"]')
    return answer ? `answer ${answer.getAttribute('data-answer-id')}` : `${el.tagName.toLowerCase()} ${el.getAttribute('data-testid') ?? ''}`.trim()
  })
}

test('on a phone, Stop leaves focus on the stopped answer, not in the composer (whose keyboard would cover it)', async ({ page }) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  // A touch screen's pointer is coarse: the app tells phones by it.
  expect(await page.evaluate(() => matchMedia('(pointer: coarse)').matches)).toBe(true)
  await chat.send(nonce('phone stop focus'))
  await chat.waitForStreaming(3)
  const answer = await chat.lastAnswerId()
  await chat.stopButton.tap()
  await chat.waitForStatus('stopped')
  await expect(chat.input).not.toBeFocused()
  await expect.poll(() => focused(page)).toBe(`answer ${answer}`)
})

test('on a phone, Regenerate leaves focus on the answer being written, not in the composer', async ({ page }) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  await chat.send(nonce('phone regenerate focus'))
  await chat.waitForText(3)
  await chat.stop()
  const first = await chat.lastAnswerId()

  await chat.lastAnswer().getByTestId('regenerate-button').tap()
  await chat.waitForStreaming(3)
  const second = await chat.lastAnswerId()
  expect(second).not.toBe(first)
  await expect(chat.input).not.toBeFocused()
  await expect.poll(() => focused(page)).toBe(`answer ${second}`)
  // Its Stop, by touch too: focus stays on it.
  await chat.stopButton.tap()
  await chat.waitForStatus('stopped')
  await expect(chat.input).not.toBeFocused()
  await expect.poll(() => focused(page)).toBe(`answer ${second}`)
})

test('on a phone, opening a chat (from the drawer, or reloading it) leaves the composer unfocused, so no keyboard covers the conversation', async ({
  page,
}) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  await chat.send(nonce('phone open focus'))
  await chat.waitForText(3)
  await chat.stop()
  const id = chat.sessionId()!

  await page.getByRole('link', { name: 'New chat' }).first().tap()
  await page.waitForURL((url) => url.pathname === '/')
  await page.getByRole('button', { name: 'Open sidebar' }).tap()
  await new Sidebar(page).item(id).tap()
  await page.waitForURL(new RegExp(`/c/${id}$`))
  await expect(chat.lastAnswer()).toHaveAttribute('data-status', 'stopped')
  await expect(chat.input).not.toBeFocused()

  await page.reload()
  await expect(chat.lastAnswer()).toHaveAttribute('data-status', 'stopped')
  await expect(chat.input).not.toBeFocused()
})

test('on a phone, an edit sent leaves focus on the message, not in the composer', async ({ page }) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  await chat.send(nonce('phone edit focus'))
  await chat.waitForText(3)
  await chat.stop()

  await chat.userMessages.first().getByTestId('edit-button').tap()
  const field = page.getByRole('textbox', { name: 'Edit your message' })
  await field.fill(nonce('phone edited'))
  await chat.userMessages.first().getByRole('button', { name: 'Send' }).tap()
  await chat.waitForStreaming(3)
  await expect(chat.input).not.toBeFocused()
  await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('message-user')
  await chat.stopButton.tap()
})

test('on a phone, the undo toast going away does not put focus in the composer (a keyboard opening 5 s after a delete)', async ({ page }) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  await chat.send(nonce('phone toast focus'))
  await chat.waitForText(3)
  await chat.stop()
  const id = chat.sessionId()!

  await page.getByRole('button', { name: 'Open sidebar' }).tap()
  const sidebar = new Sidebar(page)
  await page
    .locator('li', { has: sidebar.item(id) })
    .getByTestId('delete-chat')
    .tap()
  await page.waitForURL((url) => url.pathname === '/')
  await expect(sidebar.undoToast).toBeVisible()
  await expect(sidebar.undoToast).toHaveCount(0, { timeout: 10_000 })
  await expect(chat.input).not.toBeFocused()
  // Not lost on <body> either: on the page's main region.
  await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('main')
})
