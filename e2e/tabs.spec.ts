/**
 * Two tabs on one session (same browser context, so the same identity cookie): both
 * stream the same answer from the log, and a Stop in one tab cuts the other's view at
 * the same place.
 */
import { expect, test } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { Sidebar } from './pages/sidebar'
import { installRecorder, recordedFor, tokenSequenceProblem } from './helpers/recorder'
import { nonce, UPSTREAM_TOKENS, waitForCalls } from './helpers/upstream'

test('two tabs stream the same answer; Stop in tab A stops tab B at the same cut', async ({ context }) => {
  await installRecorder(context)
  const a = new ChatPage(await context.newPage())
  const prompt = nonce('tabs')
  await a.goto('/')
  await a.send(prompt)
  await a.waitForStreaming(20)
  const answerId = await a.lastAnswerId()

  const b = new ChatPage(await context.newPage())
  await b.goto(`/c/${a.sessionId()}`)
  await expect(b.userMessages).toHaveText([prompt])
  await expect(b.answer(answerId)).toHaveAttribute('data-status', 'streaming')
  await expect(b.stopButton).toBeVisible()

  // Both tabs show the same growing answer: B keeps up with A (it is the same log).
  const bStart = (await b.answerText(answerId)).length
  await expect.poll(async () => (await b.answerText(answerId)).length).toBeGreaterThan(bStart + 30)
  await expect
    .poll(async () => {
      const [ta, tb] = await Promise.all([a.answerText(answerId), b.answerText(answerId)])
      return ta.startsWith(tb) || tb.startsWith(ta) ? 'consistent' : `diverged: A=${ta.slice(-40)} B=${tb.slice(-40)}`
    })
    .toBe('consistent')
  await a.page.screenshot({ path: 'test-results/two-tabs-a-streaming.png' })
  await b.page.screenshot({ path: 'test-results/two-tabs-b-streaming.png' })

  const shown = await a.stopAndReadShown()
  await expect(a.answer(answerId)).toHaveAttribute('data-status', 'stopped')
  await expect(b.answer(answerId)).toHaveAttribute('data-status', 'stopped')
  await expect(b.answer(answerId).getByTestId('stopped-marker')).toBeVisible()
  await expect(b.stopButton).toHaveCount(0)
  await expect(b.input).toBeEnabled()

  // Late chunks land before the run's terminal event: once both tabs have folded it, nothing
  // more can come, and both hold the cut A saw — A never showed anything else from the Stop on.
  await expect(a.answer(answerId)).toHaveAttribute('data-ended', 'cancelled')
  await expect(b.answer(answerId)).toHaveAttribute('data-ended', 'cancelled')
  expect(await a.answerText(answerId)).toBe(shown)
  expect(await b.answerText(answerId)).toBe(shown)
  const historyA = await recordedFor(a.page, answerId)
  expect(historyA.texts.slice(historyA.texts.indexOf(shown))).toEqual([shown])
  await a.page.screenshot({ path: 'test-results/two-tabs-a-stopped.png' })
  await b.page.screenshot({ path: 'test-results/two-tabs-b-stopped.png' })

  // B never showed a broken sequence, and ended on A's cut.
  const historyB = await recordedFor(b.page, answerId)
  for (const text of historyB.texts) expect(tokenSequenceProblem(text)).toBeUndefined()
  expect(historyB.texts.at(-1)).toBe(shown)
  expect(historyB.statuses.at(-1)).toBe('stopped')

  const [call] = await waitForCalls(prompt, (c) => c.length === 1 && c[0].closedAt !== undefined)
  expect(call.closedEarly).toBe(true)
  expect(call.tokensSent).toBeLessThan(UPSTREAM_TOKENS)

  // A third view (B reloaded) agrees.
  await b.page.reload()
  await expect(b.answer(answerId)).toHaveAttribute('data-status', 'stopped')
  expect(await b.answerText(answerId)).toBe(shown)
})

test('a chat deleted from another tab: sending in this one says the chat is gone, with a way to a new chat, not "no such session" and a Retry that cannot work', async ({
  page,
}) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  await chat.send(nonce('deleted elsewhere'))
  await chat.waitForText(3)
  await chat.stop()
  // Another tab deleted it for good (the undo window over): the server no longer has it.
  const deleted = await page.evaluate(
    (id) => fetch(`/api/sessions/${id}`, { method: 'DELETE', headers: { 'content-type': 'application/json' } }).then((r) => r.status),
    chat.sessionId()!,
  )
  expect(deleted).toBeLessThan(300)

  await chat.input.fill(nonce('sent to a deleted chat'))
  await chat.input.press('Enter')
  await expect(chat.notFound).toBeVisible()
  await expect(chat.notFound.getByRole('link', { name: 'Start a new chat' })).toBeVisible()
  await expect(page.getByText('no such session')).toHaveCount(0)
  // The composer that had focus is gone: focus goes to the view's heading, which a screen reader reads, not <body>.
  await expect(chat.notFound.getByRole('heading', { name: 'This chat isn’t available' })).toBeFocused()
})

/** A chat with one stopped answer, created in `chat`'s tab; returns its id. */
async function stoppedChat(chat: ChatPage, text: string): Promise<string> {
  await chat.goto('/')
  await chat.send(text)
  await chat.waitForText(3)
  await chat.stop()
  return chat.sessionId()!
}

/**
 * What "at once" means for the other tab: well under the time it takes to notice by other
 * means (it only re-read the list when it became visible again, which side-by-side tabs never
 * do), with room for this 2-core machine's noise.
 */
const AT_ONCE = { timeout: 3_000 }
/** components/chat-list-store.ts's UNDO_MS: a delete reaches the server when its undo window ends. */
const UNDO_MS = 5_000

test('two tabs side by side: a delete, undo, rename or new chat in one shows in the other’s sidebar at once; the open chat deleted elsewhere says it is not available', async ({
  context,
}) => {
  const a = new ChatPage(await context.newPage())
  const sidebarA = new Sidebar(a.page)
  const x = await stoppedChat(a, nonce('tabs x'))
  const y = await stoppedChat(a, nonce('tabs y'))

  const b = new ChatPage(await context.newPage())
  const sidebarB = new Sidebar(b.page)
  await b.goto(`/c/${y}`)
  await expect(sidebarB.item(x)).toBeVisible()
  await expect(sidebarB.item(y)).toBeVisible()
  // Both pages stay visible throughout: nothing here fires visibilitychange.
  expect(await b.page.evaluate(() => document.visibilityState)).toBe('visible')

  // Delete, then Undo, in A: B follows each while the undo window is still open.
  await sidebarA.deleteChat(x)
  await expect(sidebarB.item(x)).toHaveCount(0, AT_ONCE)
  await sidebarA.undoButton.click()
  await expect(sidebarB.item(x)).toBeVisible(AT_ONCE)

  // Rename in A.
  const renamed = nonce('renamed in A')
  const row = a.page.locator('li', { has: sidebarA.item(x) })
  await row.hover()
  await row.getByRole('button', { name: /^Rename/ }).click()
  await a.page.getByRole('textbox', { name: 'Rename chat' }).fill(renamed)
  await a.page.keyboard.press('Enter')
  await expect(sidebarA.item(x)).toHaveText(renamed)
  await expect(sidebarB.item(x)).toHaveText(renamed, AT_ONCE)

  // A new chat in A, titled from its first message.
  const prompt = nonce('tabs z')
  const z = await stoppedChat(a, prompt)
  await expect(sidebarB.item(z)).toBeVisible(AT_ONCE)
  await expect(sidebarB.item(z)).not.toHaveText('New chat', AT_ONCE)

  // A deletes the chat B has open: it leaves B's list at once, and once the delete is final
  // (the undo window over), B's page says so instead of showing a chat that is gone.
  await b.input.focus()
  await sidebarA.deleteChat(y)
  await expect(sidebarB.item(y)).toHaveCount(0, AT_ONCE)
  await expect(b.notFound).toBeVisible({ timeout: UNDO_MS + AT_ONCE.timeout })
  await expect(b.notFound.getByRole('link', { name: 'Start a new chat' })).toBeVisible()
  await expect(b.page.getByTestId('chat-title')).toHaveText('Chat not found')
  // B's focus was in the composer, now gone: it goes to the view's heading, not <body>.
  await expect(b.notFound.getByRole('heading', { name: 'This chat isn’t available' })).toBeFocused()
})

test('search results in one tab follow a rename or delete made in another', async ({ context }) => {
  const a = new ChatPage(await context.newPage())
  const sidebarA = new Sidebar(a.page)
  const word = nonce('findme').replace(/[^a-z0-9]/gi, '')
  const x = await stoppedChat(a, `about ${word} and more`)

  const b = new ChatPage(await context.newPage())
  const sidebarB = new Sidebar(b.page)
  await b.goto('/')
  await sidebarB.search.fill(word)
  await expect.poll(() => sidebarB.resultIds()).toEqual([x])

  const renamed = nonce('renamed while found')
  const row = a.page.locator('li', { has: sidebarA.item(x) })
  await row.hover()
  await row.getByRole('button', { name: /^Rename/ }).click()
  await a.page.getByRole('textbox', { name: 'Rename chat' }).fill(renamed)
  await a.page.keyboard.press('Enter')
  await expect(sidebarB.results.first()).toContainText(renamed, AT_ONCE)

  await sidebarA.deleteChat(x)
  await expect(sidebarB.results).toHaveCount(0, AT_ONCE)
})
