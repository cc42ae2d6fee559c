/**
 * Answers made of parts in a real browser, against the test upstream streaming reasoning
 * (`reasoning_content`) and tool calls (`tool_calls` in fragments) and a real webhook receiver:
 * Stop mid-reasoning, mid-tool-input and mid-tool-call each shows what the reader saw and the
 * tool call's honest state, the same after a reload and in a second tab.
 */
import { expect, test, type Page } from '@playwright/test'
import { WEBHOOK_URL } from '../playwright.config'
import { pollUntil } from '../test/poll'
import { seriousViolations } from './helpers/axe'
import { ChatPage } from './pages/chat'

const answer = (page: Page) => page.getByTestId('message-assistant').last()

/** What the receiver has: keys it acted on, POSTs that reached it, POSTs whose sender gave up. */
async function received(): Promise<{ keys: string[]; arrived: number; abandoned: number }> {
  return (await fetch(`${WEBHOOK_URL}/__received`)).json()
}

/** The last answer's parts as the page shows them, read in the same task as the Stop click (nothing lands between). */
function stopAndReadParts(page: Page) {
  return page.evaluate(() => {
    const answers = document.querySelectorAll('[data-testid="message-assistant"]')
    const last = answers[answers.length - 1]
    const read = (selector: string) => [...last.querySelectorAll<HTMLElement>(selector)].map((e) => e.textContent ?? '')
    const shown = { reasoning: read('[data-testid="answer-reasoning-text"]'), input: read('[data-testid="tool-call-input"]') }
    ;(document.querySelector('[data-testid="stop-button"]') as HTMLButtonElement).click()
    return shown
  })
}

/** What the page shows of the last answer's parts once it has ended. */
async function shownParts(page: Page) {
  await expect(answer(page)).toHaveAttribute('data-ended', /.+/)
  return {
    reasoning: await answer(page).getByTestId('answer-reasoning-text').allTextContents(),
    input: await answer(page).getByTestId('tool-call-input').allTextContents(),
    streamed: await answer(page).getByTestId('tool-call-input-streamed').allTextContents(),
    states: await answer(page)
      .getByTestId('tool-call')
      .evaluateAll((calls) => calls.map((c) => c.getAttribute('data-state'))),
  }
}

/** The same view of the last answer after a reload, and in a second tab of the same session. */
async function sameEverywhere(page: Page, expected: Awaited<ReturnType<typeof shownParts>>) {
  await page.reload()
  expect(await shownParts(page)).toEqual(expected)
  const second = await page.context().newPage()
  await second.goto(page.url())
  expect(await shownParts(second)).toEqual(expected)
  await second.close()
}

test('Stop mid-reasoning: the reasoning the reader saw stays and nothing past it, after a reload and in a second tab', async ({ page }) => {
  const chat = new ChatPage(page)
  await chat.goto()
  await chat.send(`Weigh it up ${Date.now()} [[reasons 30]]`)
  await expect.poll(async () => (await answer(page).getByTestId('answer-reasoning-text').textContent())?.length ?? 0).toBeGreaterThan(60)
  const seen = await stopAndReadParts(page)
  await expect(answer(page)).toHaveAttribute('data-status', 'stopped')
  const shown = await shownParts(page)
  expect(shown.reasoning).toEqual(seen.reasoning)
  expect(shown.states).toEqual([])
  // The reasoning stays readable, collapsed: the part is a disclosure the reader can open again.
  await answer(page).getByTestId('answer-reasoning').locator('summary').click()
  await expect(answer(page).getByTestId('answer-reasoning-text')).toBeVisible()
  expect(await seriousViolations(page)).toEqual([])
  await sameEverywhere(page, shown)
})

test('Stop mid-tool-input: the input seen stays, the tool is never called (not started), the receiver sees nothing', async ({ page }) => {
  const before = await received()
  const chat = new ChatPage(page)
  await chat.goto()
  const message = `release ${Date.now()} `.repeat(40)
  await chat.send(`Announce it [[call sendWebhook {"message":"${message}"}]]`)
  await expect.poll(async () => (await answer(page).getByTestId('tool-call-input').textContent())?.length ?? 0).toBeGreaterThan(20)
  const seen = await stopAndReadParts(page)
  const shown = await shownParts(page)
  // The arguments cut off read as what they are; the text seen is kept aside, as it was (issue 36, item 5).
  expect(shown.input).toEqual(['Arguments cut off at the Stop'])
  expect(shown.streamed).toEqual(seen.input)
  expect(shown.states).toEqual(['input'])
  await expect(answer(page).getByTestId('tool-call-state')).toHaveText('Not started')
  expect((await received()).arrived).toBe(before.arrived)
  await sameEverywhere(page, shown)
})

for (const { mode, state, label } of [
  { mode: '', state: 'done', label: 'Done' },
  { mode: '[[queued]]', state: 'cancelled', label: 'Stopped — did not happen' },
  { mode: '[[mute]]', state: 'unknown', label: 'May have happened' },
]) {
  test(`Stop mid-tool-call, the receiver ${mode || 'acting at once'}: the POST is aborted and the call shows ${state}, after a reload and in a second tab`, async ({
    page,
  }) => {
    const before = await received()
    const chat = new ChatPage(page)
    await chat.goto()
    await chat.send(`Tell them [[call sendWebhook {"message":"shipped ${Date.now()} ${mode}"}]]`)
    await expect(answer(page).getByTestId('tool-call')).toHaveAttribute('data-state', 'running')
    // Stop while the POST is at the receiver (it holds each one 30 s).
    await pollUntil('the POST to reach the receiver', async () => (await received()).arrived > before.arrived)
    await chat.stop()
    // Every word the call shows from the Stop on is the reader's: no workers, operators or /runs (issue 36, item 5).
    const toldAfterStop: string[] = []
    await expect
      .poll(async () => {
        toldAfterStop.push((await answer(page).getByTestId('tool-call').textContent()) ?? '')
        return answer(page).getByTestId('tool-call').getAttribute('data-state')
      })
      .toBe(state)
    expect(toldAfterStop.filter((words) => /worker|operator|\/runs/i.test(words))).toEqual([])
    await expect(answer(page).getByTestId('tool-call-state')).toHaveText(label)
    // The tool's own request was closed by the Stop.
    await pollUntil('the POST to be abandoned', async () => (await received()).abandoned > before.abandoned)
    const shown = await shownParts(page)
    expect(shown.states).toEqual([state])
    expect(await seriousViolations(page)).toEqual([])
    await sameEverywhere(page, shown)
  })
}

test('Continue after a tool answer against a server that starts over: the call shown in the continued version, no text twice, one POST', async ({
  page,
}) => {
  test.setTimeout(120_000)
  const before = await received()
  const chat = new ChatPage(page)
  await chat.goto()
  await chat.send(`Tell them [[restarts]] [[call sendWebhook {"message":"continued ${Date.now()}"}]]`)
  // The suite's receiver holds each POST 30 s (playwright.config.ts, WEBHOOK_HOLD_MS).
  await expect(answer(page).getByTestId('tool-call')).toHaveAttribute('data-state', 'done', { timeout: 45_000 })
  // Stop in the text after the call.
  await chat.waitForStreaming(30)
  const stoppedId = await chat.lastAnswerId()
  const cut = await chat.stopAndReadShown()
  await expect(answer(page)).toHaveAttribute('data-ended', /.+/)

  await chat.continueAnswer()
  await expect.poll(() => chat.lastAnswerId()).not.toBe(stoppedId)
  await expect(answer(page)).toHaveAttribute('data-status', 'done', { timeout: 90_000 })
  const continued = await chat.lastAnswerText()
  // One answer from the cut on: the server's restatement was dropped, nothing twice.
  expect(continued.startsWith(cut)).toBe(true)
  expect(continued.match(/\btok0\b/g)).toHaveLength(1)
  // The continued version shows the call that happened; the model, told of it, did not make it again.
  await expect(answer(page).getByTestId('tool-call')).toHaveCount(1)
  await expect(answer(page).getByTestId('tool-call')).toHaveAttribute('data-state', 'done')
  expect((await received()).arrived).toBe(before.arrived + 1)
  await page.reload()
  await expect(answer(page).getByTestId('tool-call')).toHaveAttribute('data-state', 'done')
  expect(await chat.lastAnswerText()).toBe(continued)
})
