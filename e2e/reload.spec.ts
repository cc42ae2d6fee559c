/**
 * Reload mid-stream: the page comes back from the server's fold and the log's tail, and
 * the answer carries on where it was: every token once, in order, none missing, and it
 * keeps streaming after the reload until the model's last token.
 */
import { expect, test } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { installRecorder, recordedFor, tokenSequenceProblem } from './helpers/recorder'
import { fullAnswer, nonce, UPSTREAM_TOKEN_MS, UPSTREAM_TOKENS, waitForCalls } from './helpers/upstream'

test('a reload mid-stream resumes from the log: no duplicate, no missing chunk, still streaming', async ({ page }) => {
  test.setTimeout(UPSTREAM_TOKENS * UPSTREAM_TOKEN_MS + 30_000)
  await installRecorder(page)
  const chat = new ChatPage(page)
  const prompt = nonce('reload')

  await chat.goto('/')
  await chat.send(prompt)
  await chat.waitForStreaming(60)
  const answerId = await chat.lastAnswerId()
  await page.screenshot({ path: 'test-results/reload-mid-stream.png' })

  const beforeReload = await chat.answerText(answerId)
  const historyBefore = await recordedFor(page, answerId)
  for (const text of historyBefore.texts) expect(tokenSequenceProblem(text), `before reload: ${text}`).toBeUndefined()

  await page.reload()
  await chat.input.waitFor({ state: 'visible' })

  // It is still being written after the reload, and grows past what was shown before it.
  await expect(chat.answer(answerId)).toHaveAttribute('data-status', 'streaming')
  await expect.poll(async () => (await chat.answerText(answerId)).length).toBeGreaterThan(beforeReload.length + 20)
  const resumed = await chat.answerText(answerId)
  expect(resumed.startsWith(beforeReload), 'the resumed text continues what was shown').toBe(true)
  await expect(chat.stopButton).toBeVisible()

  // It finishes with exactly the model's answer: each token once, in order.
  await expect(chat.answer(answerId)).toHaveAttribute('data-status', 'done', { timeout: UPSTREAM_TOKENS * UPSTREAM_TOKEN_MS + 10_000 })
  expect(await chat.answerText(answerId)).toBe(fullAnswer())

  // Nothing wrong was ever on screen after the reload either.
  const historyAfter = await recordedFor(page, answerId)
  expect(historyAfter.texts.length).toBeGreaterThan(5)
  for (const text of historyAfter.texts) {
    const problem = tokenSequenceProblem(text)
    expect(problem, `after reload the page showed a broken sequence: ${problem}`).toBeUndefined()
  }
  // The status only ever moved forward: streaming, then done (never back to waiting, never stopped).
  expect(historyAfter.statuses.filter((s) => s !== 'streaming' && s !== 'done')).toEqual([])
  expect(historyAfter.statuses.at(-1)).toBe('done')

  // One model call for this prompt, run to completion: the reload did not start another.
  const calls = await waitForCalls(prompt, (c) => c.length >= 1 && c.every((x) => x.closedAt !== undefined))
  expect(calls).toHaveLength(1)
  expect(calls[0].closedEarly).toBe(false)
  expect(calls[0].tokensSent).toBe(UPSTREAM_TOKENS)

  // And a second reload shows the same, compacted answer.
  await page.reload()
  await expect(chat.answer(answerId)).toHaveAttribute('data-status', 'done')
  expect(await chat.answerText(answerId)).toBe(fullAnswer())
})

test('Stop survives an immediate reload: the same cut before and after, nothing past it ever shows', async ({ page }) => {
  await installRecorder(page)
  const chat = new ChatPage(page)
  const prompt = nonce('stop-reload')

  await chat.goto('/')
  await chat.send(prompt)
  await chat.waitForStreaming(80)
  const answerId = await chat.lastAnswerId()

  // The Stop's push is still in flight as the page unloads.
  const shown = await chat.stopAndReloadAtOnce()
  await chat.input.waitFor({ state: 'visible' })

  await expect(chat.answer(answerId)).toHaveAttribute('data-status', 'stopped')
  await expect(chat.answer(answerId).getByTestId('stopped-marker')).toBeVisible()
  expect(await chat.answerText(answerId)).toBe(shown)

  // The run's terminal event (after every chunk it wrote) has reached the page: nothing more of
  // it can land, and the page still holds the cut.
  await expect(chat.answer(answerId)).toHaveAttribute('data-ended', 'cancelled')
  expect(await chat.answerText(answerId)).toBe(shown)
  // From the first paint after the reload, the answer never showed more (or other) than the cut.
  const history = await recordedFor(page, answerId)
  expect(history.texts).toEqual([shown])
  expect(history.statuses).toEqual(['stopped'])
  await page.screenshot({ path: 'test-results/stopped-after-reload.png' })

  // The model call was closed early, soon after Stop.
  const [call] = await waitForCalls(prompt, (c) => c.length === 1 && c[0].closedAt !== undefined)
  expect(call.closedEarly).toBe(true)
  expect(call.tokensSent).toBeLessThan(UPSTREAM_TOKENS)

  await expect(chat.stopButton).toHaveCount(0)
  await expect(chat.input).toBeEnabled()
})
