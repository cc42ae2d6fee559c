/**
 * Keyboard-only use: no action leaves focus on <body>. After renaming a chat (Enter saves,
 * Esc cancels) focus is back on the chat's Rename button; deleting the open chat leaves focus
 * on Undo in the toast, so Enter takes the delete back (and the toast ending leaves focus in the
 * composer); regenerating or saving an edit (their
 * buttons go away while the answer is written) puts focus in the composer; ‹ › keep focus in
 * the version switcher, on the button still usable at either end.
 */
import { expect, test, type Page } from '@playwright/test'
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

/** Deletes the open chat with its Delete button and Enter: back on a new chat, the undo toast up. */
async function deleteOpenChatByKeyboard(page: Page, sidebar: Sidebar, id: string): Promise<void> {
  await page
    .locator('li', { has: sidebar.item(id) })
    .getByTestId('delete-chat')
    .focus()
  await page.keyboard.press('Enter')
  await page.waitForURL((url) => url.pathname === '/')
  await expect(sidebar.undoToast).toBeVisible()
}

test('deleting the open chat from the keyboard leaves focus on Undo, so Enter brings the chat back', async ({ page }) => {
  const chat = new ChatPage(page)
  const sidebar = new Sidebar(page)
  const id = await openChat(chat, nonce('delete by keyboard'))

  await deleteOpenChatByKeyboard(page, sidebar, id)
  // The new-chat page that opens must not take focus from the toast.
  await expect(sidebar.undoButton).toBeFocused()
  await page.keyboard.press('Enter')
  await page.waitForURL(new RegExp(`/c/${id}$`))
  await expect(sidebar.item(id)).toBeVisible()
  await expect(sidebar.undoToast).toHaveCount(0)
})

test('the undo toast ending with focus on Undo leaves focus in the composer, not on <body>', async ({ page }) => {
  const chat = new ChatPage(page)
  const sidebar = new Sidebar(page)
  const id = await openChat(chat, nonce('toast ends by keyboard'))

  await deleteOpenChatByKeyboard(page, sidebar, id)
  await expect(sidebar.undoButton).toBeFocused()
  await expect(sidebar.undoToast).toHaveCount(0, { timeout: 10_000 })
  await expect(chat.input).toBeFocused()
})

test('regenerate and an edit saved with Enter leave focus in the composer, where Esc and typing work', async ({ page }) => {
  const chat = new ChatPage(page)
  await openChat(chat, nonce('regenerate by keyboard'))

  await chat.lastAnswer().getByTestId('regenerate-button').focus()
  await page.keyboard.press('Enter')
  await chat.waitForStreaming(5)
  await expect(chat.input).toBeFocused()
  await page.keyboard.press('Escape')
  await chat.waitForStatus('stopped')

  await chat.userMessages.first().getByTestId('edit-button').focus()
  await page.keyboard.press('Enter')
  await page.keyboard.type(' (edited)')
  await page.keyboard.press('Enter')
  await chat.waitForStreaming(5)
  await expect(chat.input).toBeFocused()
  await chat.stop()
})

test('‹ and › keep focus in the version switcher: at either end, on the button that still goes somewhere', async ({ page }) => {
  const chat = new ChatPage(page)
  await openChat(chat, nonce('versions by keyboard'))
  await chat.regenerate()
  await chat.waitForText(5)
  await chat.stop()
  const answer = chat.lastAnswer()
  await expect.poll(() => chat.versionOf(answer)).toBe('2/2')

  await answer.getByTestId('version-prev').focus()
  await page.keyboard.press('Enter')
  await expect(answer.getByTestId('version-label')).toHaveText('1/2')
  await expect(chat.lastAnswer().getByTestId('version-next')).toBeFocused()
  await page.keyboard.press('Enter')
  await expect(chat.lastAnswer().getByTestId('version-label')).toHaveText('2/2')
  await expect(chat.lastAnswer().getByTestId('version-prev')).toBeFocused()
})
