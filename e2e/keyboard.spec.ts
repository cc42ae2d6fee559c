/**
 * Keyboard-only use of the sidebar: after renaming a chat (Enter saves, Esc cancels) focus
 * is back on the chat's Rename button, not lost on the page; deleting the open chat leaves
 * focus on Undo in the toast, so Enter takes the delete back.
 */
import { expect, test } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { Sidebar } from './pages/sidebar'
import { nonce } from './helpers/upstream'

test.use({ viewport: { width: 1280, height: 800 } })

/** A chat with one stopped answer, open; returns its id. */
async function openChat(chat: ChatPage, text: string): Promise<string> {
  await chat.goto('/')
  await chat.send(text)
  await chat.waitForText(5)
  await chat.stop()
  return chat.sessionId()!
}

test('renaming a chat from the keyboard: Enter saves, Esc cancels, and focus comes back to its Rename button', async ({ page }) => {
  const chat = new ChatPage(page)
  const id = await openChat(chat, nonce('rename by keyboard'))
  const row = page.locator('li', { has: new Sidebar(page).item(id) })
  const renameButton = row.getByRole('button', { name: /^Rename/ })

  await renameButton.focus()
  await page.keyboard.press('Enter')
  const field = page.getByRole('textbox', { name: 'Rename chat' })
  await expect(field).toBeFocused()
  await page.keyboard.type('Renamed by keyboard')
  await page.keyboard.press('Enter')
  await expect(new Sidebar(page).item(id)).toHaveText('Renamed by keyboard')
  await expect(row.getByRole('button', { name: 'Rename “Renamed by keyboard”' })).toBeFocused()

  await page.keyboard.press('Enter')
  await expect(field).toBeFocused()
  await page.keyboard.type('not kept')
  await page.keyboard.press('Escape')
  await expect(new Sidebar(page).item(id)).toHaveText('Renamed by keyboard')
  await expect(row.getByRole('button', { name: 'Rename “Renamed by keyboard”' })).toBeFocused()
})

test('deleting the open chat from the keyboard leaves focus on Undo, so Enter brings the chat back', async ({ page }) => {
  const chat = new ChatPage(page)
  const sidebar = new Sidebar(page)
  const id = await openChat(chat, nonce('delete by keyboard'))

  await page
    .locator('li', { has: sidebar.item(id) })
    .getByTestId('delete-chat')
    .focus()
  await page.keyboard.press('Enter')
  await page.waitForURL((url) => url.pathname === '/')
  await expect(sidebar.undoToast).toBeVisible()
  // The new-chat page that opens must not take focus from the toast.
  await expect(sidebar.undoButton).toBeFocused()
  await page.keyboard.press('Enter')
  await page.waitForURL(new RegExp(`/c/${id}$`))
  await expect(sidebar.item(id)).toBeVisible()
  await expect(sidebar.undoToast).toHaveCount(0)
})
