/**
 * Stop pressed at once after Send: before the first token, before the worker has even
 * claimed the run. Either the model is never called, or its request is closed; the page
 * settles to "stopped" (never a spinner that spins forever) and the composer is usable.
 */
import { expect, test, type Page } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { installRecorder, recordedFor } from './helpers/recorder'
import { nonce, UPSTREAM_TOKENS, waitForCalls } from './helpers/upstream'
import { pollUntil } from '../test/poll'

/** Arms a click on Stop for the very DOM change that shows the button (same task, no polling gap). */
async function armStopOnAppear(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as { __stopClickedAt?: Promise<number> }
    w.__stopClickedAt = new Promise<number>((resolve) => {
      const tryClick = () => {
        const stop = document.querySelector('[data-testid="stop-button"]') as HTMLButtonElement | null
        if (!stop) return false
        stop.click()
        resolve(performance.now())
        return true
      }
      const observer = new MutationObserver(() => {
        if (tryClick()) observer.disconnect()
      })
      observer.observe(document.body, { subtree: true, childList: true, attributes: true })
    })
  })
}

/** The session's generate runs as the server holds them, once none is running any more (polled: the server announces nothing). */
async function runsOf(page: Page, sessionId: string): Promise<{ eventId: string; status: string }[]> {
  return pollUntil(`every generate run of ${sessionId} to end`, async () => {
    const response = await page.request.get('/api/runs')
    expect(response.status()).toBe(200)
    const { runs } = (await response.json()) as { runs: { sessionId: string; eventId: string; consumer: string; status: string }[] }
    const mine = runs.filter((r) => r.sessionId === sessionId && r.consumer === 'generate')
    return mine.every((r) => ['CANCELLED', 'COMPLETED', 'FAILED'].includes(r.status)) ? mine : undefined
  })
}

async function stopClicked(page: Page): Promise<void> {
  await page.waitForFunction(() => (window as unknown as { __stopClickedAt?: Promise<number> }).__stopClickedAt !== undefined)
  await page.evaluate(() => (window as unknown as { __stopClickedAt: Promise<number> }).__stopClickedAt)
}

test('Stop pressed at once after Send: the model is never reached or its request closes; the page settles to stopped', async ({ page }) => {
  test.setTimeout(45_000)
  await installRecorder(page)
  const chat = new ChatPage(page)

  // Three rounds: the first creates the chat from "/", the next two send in it.
  const prompts = [nonce('stop-early-1'), nonce('stop-early-2'), nonce('stop-early-3')]
  for (const [round, prompt] of prompts.entries()) {
    if (round === 0) await chat.goto('/')
    await chat.input.fill(prompt)
    await armStopOnAppear(page)
    await chat.sendButton.click()
    await stopClicked(page)
    await chat.userMessages.nth(round).waitFor()

    // Settles: stopped, no spinner, Stop gone, composer usable.
    const answer = chat.answers.nth(round)
    await expect(answer).toHaveAttribute('data-status', 'stopped', { timeout: 5_000 })
    await expect(answer.getByTestId('stopped-marker')).toBeVisible()
    await expect(chat.stopButton).toHaveCount(0)
    await expect(chat.sendButton).toBeVisible()
    await expect(chat.input).toBeEnabled()
    await expect(page.getByText('The assistant is thinking…')).toHaveCount(0)
    // Stopped having seen nothing of this answer: nothing of it shows.
    expect(await answer.getByTestId('answer-text').innerText()).toBe('')
    if (round === 0) await page.screenshot({ path: 'test-results/stopped-before-first-token.png' })

    // The model was never called for it, or its call was closed early (and never retried).
    const calls = await waitForCalls(prompt, (c) => c.every((x) => x.closedAt !== undefined), 5_000)
    for (const call of calls) {
      expect(call.closedEarly).toBe(true)
      expect(call.tokensSent).toBeLessThan(UPSTREAM_TOKENS)
    }
    expect(calls.length).toBeLessThanOrEqual(1)
    test.info().annotations.push({
      type: 'upstream',
      description: `round ${round + 1}: ${calls.length === 0 ? 'the model was never called' : `model call closed early after ${calls[0].tokensSent} tokens`}`,
    })

    // The page never showed a token of it.
    const history = await recordedFor(page, (await answer.getAttribute('data-answer-id'))!)
    expect(history.texts.filter((t) => t !== '')).toEqual([])
    expect(history.statuses).not.toContain('streaming')
    expect(history.statuses.at(-1)).toBe('stopped')
  }

  // No (new) model call for any of them, ever: each one's run is CANCELLED on the server, and a
  // terminal run is never claimed again — the condition "nothing more happens" stands for.
  const sessionId = chat.sessionId()!
  const answerIds = await chat.answers.evaluateAll((articles) => articles.map((a) => a.getAttribute('data-answer-id')))
  const runs = await runsOf(page, sessionId)
  expect(new Set(runs.map((r) => r.eventId))).toEqual(new Set(answerIds))
  expect(runs.map((r) => r.status)).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLED'])
  for (const prompt of prompts) {
    // A call its ended run made is closed by now, or closing: the upstream sees the socket go a moment later.
    const calls = await waitForCalls(prompt, (c) => c.every((x) => x.closedAt !== undefined), 5_000)
    expect(calls.length).toBeLessThanOrEqual(1)
    for (const call of calls) expect(call.closedEarly).toBe(true)
  }
  await page.reload()
  await expect(chat.answers).toHaveCount(prompts.length)
  for (let i = 0; i < prompts.length; i++) {
    await expect(chat.answers.nth(i)).toHaveAttribute('data-status', 'stopped')
    expect(await chat.answers.nth(i).getByTestId('answer-text').innerText()).toBe('')
  }
  await expect(chat.stopButton).toHaveCount(0)
  await expect(chat.input).toBeEnabled()
})
