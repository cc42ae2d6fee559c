/**
 * Two tabs on one session (same browser context, so the same identity cookie): both
 * stream the same answer from the log, and a Stop in one tab cuts the other's view at
 * the same place.
 */
import { expect, test } from '@playwright/test'
import { ChatPage } from './pages/chat'
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
})
