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
