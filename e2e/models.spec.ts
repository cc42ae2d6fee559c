/**
 * Model choice and Continue after Stop in the browser, against the test upstream (two models
 * configured on it, told apart by the name each request sends): the picked model writes the
 * answer and the answer shows its label; a regenerate with another model is a second version,
 * both browsable; a stopped answer's Continue streams on from the cut, and a Stop on the
 * continuation cuts it exactly; every view is the same after a reload.
 */
import { expect, test } from '@playwright/test'
import { E2E_MODELS } from '../playwright.config'
import { ChatPage } from './pages/chat'
import { callMessages, fullAnswer, nonce, upstreamCalls, type UpstreamCall } from './helpers/upstream'
import { pollUntil } from '../test/poll'

const [DEFAULT_MODEL, OTHER_MODEL] = E2E_MODELS

/** The upstream calls any of whose messages holds `text` (a Continue's last message is the cut, not the question). */
async function callsMentioning(text: string, count: number): Promise<UpstreamCall[]> {
  return pollUntil(
    () => `${count} upstream calls mentioning ${text}`,
    async () => {
      const calls = (await upstreamCalls()).filter((c) => JSON.stringify(c.body.messages ?? []).includes(text))
      return calls.length >= count ? calls : undefined
    },
    { timeoutMs: 10_000 },
  )
}

/** The answer's run has ended (its terminal event folded in): nothing more of it can land. */
async function ended(chat: ChatPage) {
  await expect(chat.lastAnswer()).toHaveAttribute('data-ended', /.+/)
}

test('the picked model answers and its label shows; regenerating with the other model makes a second version, both browsable after a reload', async ({
  page,
}) => {
  test.setTimeout(90_000)
  const chat = new ChatPage(page)
  const question = nonce('picker')
  await chat.goto('/')
  await chat.pickModel(OTHER_MODEL.id)
  await chat.send(question)
  await chat.waitForStreaming(20)
  const first = await chat.lastAnswerId()
  await chat.stop()
  await ended(chat)
  await expect(chat.answer(first).getByTestId('answer-model')).toHaveText(OTHER_MODEL.label)

  await chat.pickModel(DEFAULT_MODEL.id)
  await chat.regenerate()
  await expect.poll(() => chat.lastAnswerId()).not.toBe(first)
  const second = await chat.lastAnswerId()
  await chat.waitForStreaming(20)
  await chat.stop()
  await ended(chat)
  await expect(chat.answer(second).getByTestId('answer-model')).toHaveText(DEFAULT_MODEL.label)

  // Each version was written by the model picked for it.
  const calls = await callsMentioning(question, 2)
  expect(calls.map((c) => (c.body as { model?: string }).model)).toEqual([OTHER_MODEL.id, DEFAULT_MODEL.id])

  const browse = async (view: ChatPage) => {
    await expect.poll(() => view.versionOf(view.lastAnswer())).toBe('2/2')
    const newest = await view.modelOf(view.lastAnswer())
    await view.previousVersion(view.lastAnswer())
    await expect.poll(() => view.versionOf(view.lastAnswer())).toBe('1/2')
    return [newest, await view.modelOf(view.lastAnswer())]
  }
  expect(await browse(chat)).toEqual([DEFAULT_MODEL.label, OTHER_MODEL.label])
  await page.reload()
  await chat.input.waitFor()
  expect(await browse(chat)).toEqual([DEFAULT_MODEL.label, OTHER_MODEL.label])
})

test('Stop, then Continue: the continuation streams on from the cut; a Stop on it cuts it exactly, the same in another tab and after a reload', async ({
  page,
  context,
}) => {
  test.setTimeout(90_000)
  const chat = new ChatPage(page)
  const question = nonce('continue')
  await chat.goto('/')
  await chat.send(question)
  await chat.waitForStreaming(30)
  const stoppedId = await chat.lastAnswerId()
  const cut = await chat.stopAndReadShown()
  await ended(chat)
  await expect.poll(() => chat.answerText(stoppedId)).toBe(cut)

  await chat.continueAnswer()
  await expect.poll(() => chat.lastAnswerId()).not.toBe(stoppedId)
  const continuedId = await chat.lastAnswerId()
  await expect.poll(() => chat.versionOf(chat.lastAnswer())).toBe('2/2')
  // It shows the cut at once and streams on after it.
  await chat.waitForText(cut.length + 40)
  await chat.waitForStreaming(cut.length + 40)
  const cutOfContinuation = await chat.stopAndReadShown()
  await ended(chat)

  // The model was sent the cut as the answer so far, not what streamed past it.
  const [, continuation] = await callsMentioning(question, 2)
  const sentSoFar = callMessages(continuation).at(-1)!
  expect(sentSoFar.role).toBe('assistant')
  expect(sentSoFar.text.trim()).toBe(cut)
  // One answer from the cut on: the upstream's answer read from its start, nothing twice.
  expect(cutOfContinuation.startsWith(cut)).toBe(true)
  expect(cutOfContinuation.length).toBeGreaterThan(cut.length)
  expect(fullAnswer().startsWith(cutOfContinuation)).toBe(true)
  // The Stop on the continuation is exact: what the reader saw, and nothing that landed after.
  await expect.poll(() => chat.answerText(continuedId)).toBe(cutOfContinuation)
  await expect(chat.lastAnswer().getByTestId('continue-button')).toBeVisible()

  // Another tab reads the same: both versions, each with its own cut.
  const other = new ChatPage(await context.newPage())
  await other.goto(page.url())
  await expect.poll(() => other.versionOf(other.lastAnswer())).toBe('2/2')
  await expect.poll(() => other.lastAnswerText()).toBe(cutOfContinuation)
  await other.previousVersion(other.lastAnswer())
  await expect.poll(() => other.lastAnswerText()).toBe(cut)
  await other.page.close()

  await page.reload()
  await chat.input.waitFor()
  await expect.poll(() => chat.versionOf(chat.lastAnswer())).toBe('2/2')
  await expect.poll(() => chat.lastAnswerText()).toBe(cutOfContinuation)
  await chat.previousVersion(chat.lastAnswer())
  await expect.poll(() => chat.versionOf(chat.lastAnswer())).toBe('1/2')
  await expect.poll(() => chat.lastAnswerText()).toBe(cut)
})
