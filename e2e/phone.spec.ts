/**
 * A phone has no hover: what a mouse reveals on hover must show there without it. The
 * drawer's Rename and Delete, hover-revealed on a wide screen, show on every chat.
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

  await page.getByRole('button', { name: 'Open sidebar' }).tap()
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
