/**
 * Many generations in one session, with stops and a regenerate in between. Each answer
 * keeps its own cut (a Stop names one generation and cuts at what was seen of it), the
 * model is given the cut text as history, and a reload shows every answer as it was.
 */
import { expect, test } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { installRecorder, recordedFor, tokenSequenceProblem } from './helpers/recorder'
import { callMessages, fullAnswer, nonce, UPSTREAM_TOKEN_MS, UPSTREAM_TOKENS, waitForCalls } from './helpers/upstream'

const STREAM_MS = UPSTREAM_TOKENS * UPSTREAM_TOKEN_MS

test('stops, a regenerate and a full answer in one session: each answer keeps its own cut, across a reload', async ({ page }) => {
  test.setTimeout(STREAM_MS + 45_000)
  await installRecorder(page)
  const chat = new ChatPage(page)
  const q1 = nonce('gen-q1')
  const q2 = nonce('gen-q2')
  const q3 = nonce('gen-q3')

  // Turn 1: stopped early.
  await chat.goto('/')
  await chat.send(q1)
  await chat.waitForStreaming(30)
  const first = await chat.lastAnswerId()
  const cutFirst = await chat.stopAndReadShown()
  await expect(chat.answer(first)).toHaveAttribute('data-status', 'stopped')
  await waitForCalls(q1, (c) => c.length === 1 && c[0].closedEarly)

  // Regenerate it: a new generation takes its place, and is stopped later on.
  await chat.regenerate()
  await expect(chat.answers).toHaveCount(1)
  const regenerated = await chat.lastAnswerId()
  expect(regenerated).not.toBe(first)
  await expect(chat.answer(first)).toHaveCount(0)
  await chat.waitForText(cutFirst.length + 60)
  const cutRegenerated = await chat.stopAndReadShown()
  await expect(chat.answer(regenerated)).toHaveAttribute('data-status', 'stopped')
  expect(cutRegenerated.length).toBeGreaterThan(cutFirst.length)
  // The regenerate's model call saw only the question: the old answer is not history.
  const q1Calls = await waitForCalls(q1, (c) => c.length === 2 && c.every((x) => x.closedEarly))
  expect(callMessages(q1Calls[1]).filter((m) => m.role === 'assistant')).toEqual([])

  // Turn 2: runs to the end.
  await chat.send(q2)
  await expect(chat.answers).toHaveCount(2)
  const second = await chat.lastAnswerId()
  await chat.waitForStreaming(10)
  await page.screenshot({ path: 'test-results/generations-mid-stream.png' })
  await expect(chat.answer(second)).toHaveAttribute('data-status', 'done', { timeout: STREAM_MS + 10_000 })
  expect(await chat.answerText(second)).toBe(fullAnswer())
  // Its model call was given turn 1 as the user saw it: cut, not the chunks past the cut.
  const [q2Call] = await waitForCalls(q2, (c) => c.length === 1 && c[0].closedAt !== undefined)
  expect(q2Call.closedEarly).toBe(false)
  const history2 = callMessages(q2Call).filter((m) => m.role !== 'system')
  expect(history2.map((m) => m.role)).toEqual(['user', 'assistant', 'user'])
  expect(history2[1].text.trim()).toBe(cutRegenerated)

  // Turn 3: stopped mid-way.
  await chat.send(q3)
  await expect(chat.answers).toHaveCount(3)
  const third = await chat.lastAnswerId()
  await chat.waitForStreaming(45)
  const cutThird = await chat.stopAndReadShown()
  await expect(chat.answer(third)).toHaveAttribute('data-status', 'stopped')
  const [q3Call] = await waitForCalls(q3, (c) => c.length === 1 && c[0].closedAt !== undefined)
  expect(q3Call.closedEarly).toBe(true)
  const history3 = callMessages(q3Call).filter((m) => m.role !== 'system')
  expect(history3.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user'])
  expect(history3[1].text.trim()).toBe(cutRegenerated)
  expect(history3[3].text.trim()).toBe(fullAnswer())

  const expected = [
    { id: regenerated, status: 'stopped', text: cutRegenerated },
    { id: second, status: 'done', text: fullAnswer() },
    { id: third, status: 'stopped', text: cutThird },
  ]
  // Every run's terminal event has reached the page: nothing more of them can land.
  for (const { id } of expected) await expect(chat.answer(id)).toHaveAttribute('data-ended', /.+/)
  expect(await chat.answersNow()).toEqual(expected)
  for (const { id, text } of expected) {
    expect(tokenSequenceProblem(text)).toBeUndefined()
    // The stopped answers never showed more than their cut once stopped.
    const history = await recordedFor(page, id)
    const stoppedAt = history.statuses.indexOf('stopped')
    if (stoppedAt !== -1) expect(history.texts.at(-1)).toBe(text)
  }
  await page.screenshot({ path: 'test-results/generations-stopped.png' })

  // The same three answers, each with its own cut, after a reload.
  await page.reload()
  await chat.input.waitFor({ state: 'visible' })
  await expect(chat.answers).toHaveCount(3)
  await expect.poll(() => chat.answersNow()).toEqual(expected)
  await expect(chat.userMessages).toHaveText([q1, q2, q3])
  // Every run's terminal event came with the page: nothing more of them can land, and from the
  // first paint after the reload the last answer showed its cut and only that.
  for (const { id } of expected) await expect(chat.answer(id)).toHaveAttribute('data-ended', /.+/)
  expect((await recordedFor(page, third)).texts).toEqual([cutThird])
})
