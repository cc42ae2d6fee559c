/**
 * Chat management in the sidebar: delete with a few seconds to undo (then the chat is really
 * gone, and a running answer was stopped first, its model call closed), search by title and
 * by what was said, and a marker on chats still generating.
 */
import { expect, test, type Page } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { Sidebar } from './pages/sidebar'
import { nonce, waitForCalls } from './helpers/upstream'

test.use({ viewport: { width: 1280, height: 800 } })

/** A chat with one stopped answer; returns its id. */
async function chatWith(chat: ChatPage, text: string): Promise<string> {
  if (chat.page.url().includes('/c/')) await chat.newChat()
  else await chat.goto('/')
  await chat.send(text)
  await chat.waitForText(5)
  await chat.stop()
  return chat.sessionId()!
}

async function sessionStatus(page: Page, id: string): Promise<number> {
  return (await page.request.get(`/api/sessions/${id}`)).status()
}

test('delete a chat, undo it, delete it again: after the undo window it is gone for good', async ({ page }) => {
  const chat = new ChatPage(page)
  const sidebar = new Sidebar(page)
  const first = await chatWith(chat, nonce('delete me'))
  const second = await chatWith(chat, nonce('keep me'))
  await expect(sidebar.item(first)).toBeVisible()

  // Delete, then undo within the window: the chat is back, and still there on the server.
  await sidebar.deleteChat(first)
  await expect(sidebar.item(first)).toHaveCount(0)
  await expect(sidebar.undoToast).toBeVisible()
  await expect(sidebar.undoButton).toBeFocused()
  await sidebar.undoButton.click()
  await expect(sidebar.item(first)).toBeVisible()
  await expect(sidebar.undoToast).toHaveCount(0)
  expect(await sessionStatus(page, first)).toBe(200)

  // Delete again and let the window pass: gone from the list, after a reload, and on the server.
  await sidebar.deleteChat(first)
  await expect(sidebar.item(first)).toHaveCount(0)
  await expect(sidebar.undoToast).toBeVisible()
  await expect(sidebar.undoToast).toHaveCount(0, { timeout: 15_000 })
  await expect.poll(() => sessionStatus(page, first)).toBe(404)
  await page.reload()
  await expect(sidebar.item(second)).toBeVisible()
  await expect(sidebar.item(first)).toHaveCount(0)
  await page.goto(`/c/${first}`)
  await expect(page.getByTestId('chat-not-found')).toBeVisible()
})

test('deleting the open chat while it answers: back to a new chat, the answer is stopped (its model call closed), then the chat is deleted', async ({
  page,
}) => {
  const chat = new ChatPage(page)
  const sidebar = new Sidebar(page)
  await chat.goto('/')
  const prompt = nonce('delete while answering')
  await chat.send(prompt)
  await chat.waitForStreaming(5)
  const id = chat.sessionId()!
  await expect(sidebar.item(id)).toHaveAttribute('data-generating', 'true')

  await sidebar.deleteChat(id)
  await page.waitForURL((url) => url.pathname === '/')
  await expect(sidebar.undoToast).toHaveCount(0, { timeout: 15_000 })
  await expect.poll(() => sessionStatus(page, id)).toBe(404)
  // The upstream request ended early: the answer was stopped, not left running into a deleted chat.
  const [call] = await waitForCalls(prompt, (calls) => calls.length === 1 && calls[0].closedAt !== undefined)
  expect(call.closedEarly).toBe(true)
})

test('search finds chats by title and by message text; clearing it (or Esc) brings the list back', async ({ page }) => {
  const chat = new ChatPage(page)
  const sidebar = new Sidebar(page)
  const marker = nonce('zebra')
  const byTitle = await chatWith(chat, `Planning ${marker} migration`)
  const byText = await chatWith(chat, nonce('unrelated title'))
  await chat.send(`a later message that mentions quokka-${marker}`)
  await chat.waitForText(5)
  await chat.stop()
  const neither = await chatWith(chat, nonce('neither'))

  const { search, results } = sidebar
  await search.fill(`QUOKKA-${marker}`)
  await expect(results).toHaveCount(1)
  await expect(results.first()).toHaveAttribute('data-session-id', byText)
  await expect(results.first()).toContainText(`quokka-${marker}`)

  await search.fill(marker)
  await expect(results).toHaveCount(2)
  expect((await sidebar.resultIds()).sort()).toEqual([byTitle, byText].sort())

  await search.fill('no-such-chat-' + marker)
  await expect(page.getByText('No chats match')).toBeVisible()

  // Esc clears the search (the topmost thing), and the full list is back.
  await search.press('Escape')
  await expect(search).toHaveValue('')
  await expect(results).toHaveCount(0)
  await expect(sidebar.item(neither)).toBeVisible()

  // A result opens its chat, at the message that matched.
  await search.fill(`quokka-${marker}`)
  await results.first().click()
  await page.waitForURL(new RegExp(`/c/${byText}\\?turn=[\\w-]+$`))
  await expect(page.getByTestId('message-user').filter({ hasText: `quokka-${marker}` })).toBeInViewport()
})

test('a chat still generating is marked in the sidebar until its answer ends', async ({ page }) => {
  const chat = new ChatPage(page)
  const sidebar = new Sidebar(page)
  const idle = await chatWith(chat, nonce('idle'))
  await chat.newChat()
  await chat.send(nonce('busy'))
  await chat.waitForStreaming(3)
  const busy = chat.sessionId()!
  await expect(sidebar.item(busy)).toHaveAttribute('data-generating', 'true')
  await expect(sidebar.item(busy).getByText('Generating', { exact: false })).toHaveCount(1)
  await expect(sidebar.item(idle)).toHaveAttribute('data-generating', 'false')

  // Another chat open: the busy one keeps its marker (from the server) while it answers…
  await sidebar.item(idle).click()
  await page.waitForURL(new RegExp(`/c/${idle}$`))
  await expect(sidebar.item(busy)).toHaveAttribute('data-generating', 'true')
  // …and loses it when its answer ends there, unseen (stopped from elsewhere: another tab, say).
  const snapshot = (await (await page.request.get(`/api/sessions/${busy}/snapshot`)).json()) as {
    state: { turns: Array<{ kind: string; id: string }> }
    lastSeenIndex: number
  }
  const answer = snapshot.state.turns.filter((t) => t.kind === 'assistant').at(-1)!
  const stopped = await page.request.post(`/api/sessions/${busy}/events`, {
    data: { type: 'cancelled', payload: { of: answer.id, lastSeenIndex: snapshot.lastSeenIndex } },
    headers: { origin: new URL(page.url()).origin }, // as the page's own fetch: the CSRF check wants our origin
  })
  expect(stopped.status()).toBe(201)
  await expect(sidebar.item(busy)).toHaveAttribute('data-generating', 'false', { timeout: 15_000 })
  await expect(sidebar.item(busy).getByText('Generating', { exact: false })).toHaveCount(0)
})

test('the open chat stopped: its Generating mark goes as the answer’s end is in the log, not a list poll (3 s) later', async ({ page }) => {
  const chat = new ChatPage(page)
  const sidebar = new Sidebar(page)
  await chat.goto('/')
  await chat.send(nonce('stopped here'))
  await chat.waitForStreaming(3)
  const id = chat.sessionId()!
  await expect(sidebar.item(id)).toHaveAttribute('data-generating', 'true')
  await chat.stop()
  // The run's terminal event is in the log: the server has settled it.
  await expect(chat.lastAnswer()).toHaveAttribute('data-ended', 'cancelled')
  // Well under the list's 3 s poll: the end of the answer on screen re-reads the list.
  await expect(sidebar.item(id)).toHaveAttribute('data-generating', 'false', { timeout: 1_500 })
})
