/**
 * Versions, not destruction: regenerate and edit keep every version, browsable with ‹ n/m ›,
 * and each version keeps its own Stop cut across a reload and in another tab.
 */
import { expect, test } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { callMessages, nonce, waitForCalls } from './helpers/upstream'

test('regenerate twice, stopping each version: every version keeps its own cut, across a reload and in another tab', async ({ page, context }) => {
  test.setTimeout(90_000)
  const chat = new ChatPage(page)
  const question = nonce('versions')
  await chat.goto('/')
  await chat.send(question)

  // Version 1, stopped early.
  await chat.waitForStreaming(20)
  const v1 = await chat.lastAnswerId()
  const cut1 = await chat.stopAndReadShown()
  await expect(chat.answer(v1)).toHaveAttribute('data-status', 'stopped')
  await expect.poll(() => chat.versionOf(chat.lastAnswer())).toBeNull()

  // Version 2 (the first regenerate), stopped later on.
  await chat.regenerate()
  await expect.poll(() => chat.lastAnswerId()).not.toBe(v1)
  const v2 = await chat.lastAnswerId()
  await expect(chat.answers).toHaveCount(1)
  await expect.poll(() => chat.versionOf(chat.lastAnswer())).toBe('2/2')
  await chat.waitForText(cut1.length + 40)
  const cut2 = await chat.stopAndReadShown()
  await expect(chat.answer(v2)).toHaveAttribute('data-status', 'stopped')

  // Version 3 (the second regenerate), stopped later still.
  await chat.regenerate()
  await expect.poll(() => chat.lastAnswerId()).not.toBe(v2)
  const v3 = await chat.lastAnswerId()
  await chat.waitForText(cut2.length + 40)
  const cut3 = await chat.stopAndReadShown()
  await expect(chat.answer(v3)).toHaveAttribute('data-status', 'stopped')
  expect(new Set([cut1, cut2, cut3]).size).toBe(3)
  // Each regenerate's model call saw only the question: no other version is history.
  const calls = await waitForCalls(question, (c) => c.length === 3 && c.every((x) => x.closedAt !== undefined))
  for (const call of calls) expect(callMessages(call).filter((m) => m.role === 'assistant')).toEqual([])

  /** Walks ‹ back from the newest version and reads each one: [version label, status, text]. */
  const browse = async (view: ChatPage) => {
    const seen: Array<[string | null, string | null, string]> = []
    await expect.poll(() => view.versionOf(view.lastAnswer())).toBe('3/3')
    for (let i = 0; i < 3; i++) {
      if (i > 0) await view.previousVersion(view.lastAnswer())
      await expect.poll(() => view.versionOf(view.lastAnswer())).toBe(`${3 - i}/3`)
      seen.push([await view.versionOf(view.lastAnswer()), await view.lastAnswerStatus(), await view.lastAnswerText()])
    }
    return seen
  }
  const expected = [
    ['3/3', 'stopped', cut3],
    ['2/3', 'stopped', cut2],
    ['1/3', 'stopped', cut1],
  ]
  expect(await browse(chat)).toEqual(expected)

  // After a reload: the newest shows, and every older one keeps its cut.
  await page.reload()
  await chat.input.waitFor({ state: 'visible' })
  await expect(chat.answers).toHaveCount(1)
  expect(await browse(chat)).toEqual(expected)

  // In another tab.
  const other = new ChatPage(await context.newPage())
  await other.goto(`/c/${chat.sessionId()}`)
  expect(await browse(other)).toEqual(expected)
  // › brings the newest back.
  await other.nextVersion(other.lastAnswer())
  await other.nextVersion(other.lastAnswer())
  expect([await other.versionOf(other.lastAnswer()), await other.lastAnswerText()]).toEqual(['3/3', cut3])
})

test('editing a message is a new version of it: the old branch is kept, and editing the first message retitles the chat', async ({ page }) => {
  test.setTimeout(60_000)
  const chat = new ChatPage(page)
  const first = nonce('edit-first')
  const followUp = nonce('edit-follow-up')
  await chat.goto('/')
  await chat.send(first)
  await chat.waitForStreaming(10)
  await chat.stop()
  await chat.send(followUp)
  await chat.waitForStreaming(10)
  const cutFollowUp = await chat.stopAndReadShown()
  await expect(chat.userTexts).toHaveText([first, followUp])
  await expect(chat.sessionItems.filter({ hasText: first })).toHaveCount(1)

  const edited = nonce('edited-first')
  const firstMessage = chat.userMessages.first()
  await firstMessage.getByTestId('edit-button').click()
  await firstMessage.getByRole('textbox').fill(edited)
  await firstMessage.getByRole('button', { name: 'Send' }).click()

  // The new branch: the edited message (2/2) and its own answer; the follow-up is in the old branch.
  await expect(chat.userTexts).toHaveText([edited])
  await expect.poll(() => chat.versionOf(chat.userMessages.first())).toBe('2/2')
  await chat.waitForStreaming(10)
  await chat.stop()
  const [call] = await waitForCalls(edited, (c) => c.length === 1)
  expect(
    callMessages(call)
      .filter((m) => m.role !== 'system')
      .map((m) => m.text),
  ).toEqual([edited])
  // The chat's title follows its first message.
  await expect(chat.sessionItems.filter({ hasText: edited })).toHaveCount(1)
  await expect(chat.sessionItems.filter({ hasText: first })).toHaveCount(0)

  // ‹ on the message brings back the old branch whole, with its cut; after a reload too.
  for (const reload of [false, true]) {
    if (reload) {
      await page.reload()
      await chat.input.waitFor({ state: 'visible' })
      await expect(chat.userTexts).toHaveText([edited])
    }
    await chat.previousVersion(chat.userMessages.first())
    await expect(chat.userTexts).toHaveText([first, followUp])
    await expect.poll(() => chat.versionOf(chat.userMessages.first())).toBe('1/2')
    expect(await chat.lastAnswerText()).toBe(cutFollowUp)
  }
})
