/**
 * The network drops mid-stream. The answer keeps being written into the log on the
 * server; when the browser reconnects (Last-Event-ID, or its own lastSeenIndex) its view
 * converges to the log: the full answer, every token once, in order.
 */
import { expect, test, type BrowserContext, type Page } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { installRecorder, recordedFor, tokenSequenceProblem } from './helpers/recorder'
import { appTarget, startProxy, type CuttableProxy } from './helpers/proxy'
import { callsFor, fullAnswer, nonce, UPSTREAM_TOKEN_MS, UPSTREAM_TOKENS, waitForCalls } from './helpers/upstream'

// Note: context.setOffline(true) alone does not cut an established SSE stream in Chromium
// (the answer keeps flowing), so the drops here are real: a TCP proxy resets the sockets.

const STREAM_MS = UPSTREAM_TOKENS * UPSTREAM_TOKEN_MS

async function expectConvergedToLog(chat: ChatPage, page: Page, answerId: string, prompt: string) {
  await expect(chat.answer(answerId)).toHaveAttribute('data-status', 'done', { timeout: STREAM_MS + 10_000 })
  expect(await chat.answerText(answerId)).toBe(fullAnswer())
  await expect(chat.connectionStatus).toHaveCount(0)
  // At no moment did the page show a duplicated or a skipped chunk.
  const history = await recordedFor(page, answerId)
  for (const text of history.texts) {
    const problem = tokenSequenceProblem(text)
    expect(problem, `the page showed a broken sequence: ${problem}`).toBeUndefined()
  }
  // The server side never noticed: one model call, run to its end.
  const calls = await waitForCalls(prompt, (c) => c.length >= 1 && c.every((x) => x.closedAt !== undefined))
  expect(calls).toHaveLength(1)
  expect(calls[0].closedEarly).toBe(false)
}

test('the connection is cut (TCP reset) and refused for 1.5 s mid-stream: the view converges to the log', async ({ page, baseURL }) => {
  test.setTimeout(STREAM_MS + 30_000)
  const proxy = await startProxy(appTarget(baseURL))
  try {
    await installRecorder(page)
    const chat = new ChatPage(page)
    const prompt = nonce('tcp-cut')
    await chat.goto(`${proxy.origin}/`)
    await chat.send(prompt)
    await chat.waitForStreaming(60)
    const answerId = await chat.lastAnswerId()

    await proxy.cut(1_500)
    expect(proxy.cutCount()).toBeGreaterThan(0)
    await expect(chat.connectionStatus).toBeVisible({ timeout: 5_000 })
    const duringDrop = await chat.answerText(answerId)
    await expect(chat.connectionStatus).toHaveCount(0, { timeout: 15_000 })
    await expect.poll(async () => (await chat.answerText(answerId)).length).toBeGreaterThan(duringDrop.length + 30)
    await expectConvergedToLog(chat, page, answerId, prompt)
  } finally {
    await proxy.close()
  }
})

test('Stop pressed while the network is down: the cut holds locally, reaches the server on reconnect, and survives a reload', async ({
  page,
  context,
  baseURL,
}) => {
  test.setTimeout(40_000)
  const proxy = await startProxy(appTarget(baseURL))
  try {
    await installRecorder(page)
    const chat = new ChatPage(page)
    const prompt = nonce('stop-offline')
    await chat.goto(`${proxy.origin}/`)
    await chat.send(prompt)
    await chat.waitForStreaming(60)
    const answerId = await chat.lastAnswerId()

    // The browser goes offline and its live connections die.
    await context.setOffline(true)
    await proxy.cut(0)
    await expect(chat.connectionStatus).toBeVisible({ timeout: 5_000 })

    // Stop now: the view cuts at once, though the push cannot get out yet.
    const shown = await chat.stopAndReadShown()
    const [atStop] = await callsFor(prompt)
    await expect(chat.answer(answerId)).toHaveAttribute('data-status', 'stopped')
    await expect(chat.stopButton).toHaveCount(0)
    // The Stop went out and failed: it waits in the outbox for the network.
    await expect(chat.answer(answerId).getByTestId('stopped-marker')).toHaveAttribute('data-delivered', 'false')
    await page.screenshot({ path: 'test-results/network-stopped-offline.png' })
    // Meanwhile the model is still running: only the Stop in the log can end it. Shown by the
    // call's progress, not a pause: it streams on well past the Stop (20 tokens, 1.2 s at 60 ms),
    // its reader gone and its Stop failed; closed by then, it fails here.
    const [running] = await waitForCalls(prompt, (c) => c.length === 1 && (c[0].closedAt !== undefined || c[0].tokensSent >= atStop.tokensSent + 20))
    expect(running.closedAt).toBeUndefined()

    await context.setOffline(false)
    // The retried push lands: the model call is closed.
    const [call] = await waitForCalls(prompt, (c) => c.length === 1 && c[0].closedAt !== undefined, 10_000)
    expect(call.closedEarly).toBe(true)
    await expect(chat.connectionStatus).toHaveCount(0, { timeout: 10_000 })
    await expect(chat.errorAlert).toHaveCount(0)

    // The tail brought the chunks written during the drop (true history), and none of
    // them showed: from the moment of Stop the page held exactly the cut.
    await expect(chat.answer(answerId)).toHaveAttribute('data-ended', 'cancelled')
    expect(await chat.answerText(answerId)).toBe(shown)
    const history = await recordedFor(page, answerId)
    const stoppedFrom = history.texts.indexOf(shown)
    expect(stoppedFrom).toBeGreaterThanOrEqual(0)
    expect(history.texts.slice(stoppedFrom)).toEqual([shown])
    expect(history.statuses.at(-1)).toBe('stopped')

    await page.reload()
    await expect(chat.answer(answerId)).toHaveAttribute('data-status', 'stopped')
    expect(await chat.answerText(answerId)).toBe(shown)
  } finally {
    await context.setOffline(false)
    await proxy.close()
  }
})

/** An answer streaming through a proxy the test can take away: the chat, its prompt, the answer's id and the chat's path. */
async function streamBehindProxy(page: Page, proxy: CuttableProxy, label: string) {
  const chat = new ChatPage(page)
  const prompt = nonce(label)
  await chat.goto(`${proxy.origin}/`)
  await chat.send(prompt)
  await chat.waitForStreaming(60)
  return { chat, prompt, answerId: await chat.lastAnswerId(), path: `/c/${chat.sessionId()}` }
}

/**
 * The server becomes unreachable (every connection refused, until `proxy.reopen()`) and the
 * person presses Stop: what the page showed, with the Stop still undelivered. Not
 * context.setOffline: a keepalive send outliving its page escapes Chromium's emulation.
 */
async function stopWhileUnreachable(chat: ChatPage, proxy: CuttableProxy, answerId: string): Promise<string> {
  await proxy.cut(10 * 60_000)
  await expect(chat.connectionStatus).toBeVisible({ timeout: 5_000 })
  const shown = await chat.stopAndReadShown()
  await expect(chat.answer(answerId).getByTestId('stopped-marker')).toHaveAttribute('data-delivered', 'false')
  return shown
}

/** The model call is closed early: the Stop reached the log. */
async function expectClosedEarly(prompt: string): Promise<void> {
  const [call] = await waitForCalls(prompt, (c) => c.length === 1 && c[0].closedAt !== undefined, 15_000)
  expect(call.closedEarly).toBe(true)
}

test('Stop pressed while the server is unreachable, then its tab closed: another tab of the chat takes the Stop at once and delivers it, and a tab opened later shows the cut', async ({
  page,
  context,
  baseURL,
}) => {
  test.setTimeout(60_000)
  const proxy = await startProxy(appTarget(baseURL))
  try {
    const { chat, prompt, answerId, path } = await streamBehindProxy(page, proxy, 'stop-unreachable-closed')
    // A second tab of the same chat, streaming the same answer.
    const otherChat = new ChatPage(await context.newPage())
    await otherChat.goto(`${proxy.origin}${path}`)
    await otherChat.waitForStreaming(60)

    const shown = await stopWhileUnreachable(chat, proxy, answerId)
    // The tab that pressed Stop is closed before the Stop could leave it.
    await page.close()
    // The other tab holds the Stop too, the server still away: its view is cut where the closed tab's was.
    await expect(otherChat.answer(answerId)).toHaveAttribute('data-status', 'stopped')
    const [meanwhile] = await callsFor(prompt)
    expect(meanwhile.closedAt).toBeUndefined() // the model still runs: only the Stop in the log can end it

    proxy.reopen()
    await expectClosedEarly(prompt)
    await expect(otherChat.answer(answerId)).toHaveAttribute('data-ended', 'cancelled', { timeout: 10_000 })
    expect(await otherChat.answerText(answerId)).toBe(shown)

    // A tab opened afterwards reads the same cut from the log.
    const laterChat = new ChatPage(await context.newPage())
    await laterChat.goto(`${proxy.origin}${path}`)
    await expect(laterChat.answer(answerId)).toHaveAttribute('data-status', 'stopped')
    expect(await laterChat.answerText(answerId)).toBe(shown)
  } finally {
    await proxy.close()
  }
})

test('Stop pressed while the server is unreachable, then the page left: the next page of the app sends it, without the chat being opened again', async ({
  page,
  baseURL,
}) => {
  test.setTimeout(60_000)
  const proxy = await startProxy(appTarget(baseURL))
  try {
    const { chat, prompt, answerId, path } = await streamBehindProxy(page, proxy, 'stop-unreachable-left')
    const shown = await stopWhileUnreachable(chat, proxy, answerId)
    // The person moves on: "New chat" cannot load while the server is away, and the page is
    // replaced by the browser's error page. Nothing of the chat is open any more.
    await chat.newChatButton.click()
    await expect.poll(() => page.url()).not.toContain(path)
    const [meanwhile] = await callsFor(prompt)
    expect(meanwhile.closedAt).toBeUndefined()

    // The server is reachable again and the person opens the app's home page, not the chat.
    proxy.reopen()
    await chat.goto(`${proxy.origin}/`)
    await expectClosedEarly(prompt)

    await chat.goto(`${proxy.origin}${path}`)
    await expect(chat.answer(answerId)).toHaveAttribute('data-ended', 'cancelled')
    expect(await chat.answerText(answerId)).toBe(shown)
  } finally {
    await proxy.close()
  }
})

/**
 * The answer as the server's fold has it, read straight from the app, not through the proxy
 * (the identity cookie is the context's: cookies do not depend on the port).
 */
async function foldedAnswer(context: BrowserContext, baseURL: string | undefined, sessionId: string, answerId: string) {
  const response = await context.request.get(`${baseURL}/api/sessions/${sessionId}/snapshot`)
  expect(response.status()).toBe(200)
  const { state } = (await response.json()) as { state: { turns: { id: string; finishReason?: string }[] } }
  return state.turns.find((turn) => turn.id === answerId)
}

test('Stop pressed while the server is unreachable and the answer finishes meanwhile: the cut holds, the page says the answer had finished and offers the rest; the same after a reload and in a second tab', async ({
  page,
  context,
  baseURL,
}) => {
  test.setTimeout(STREAM_MS + 60_000)
  const proxy = await startProxy(appTarget(baseURL))
  try {
    await installRecorder(context)
    const { chat, prompt, answerId, path } = await streamBehindProxy(page, proxy, 'stop-after-finish')
    const shown = await stopWhileUnreachable(chat, proxy, answerId)
    // The worker streams the answer to its end meanwhile: its Stop cannot reach the log.
    const [call] = await waitForCalls(prompt, (c) => c.length === 1 && c[0].closedAt !== undefined, STREAM_MS + 10_000)
    expect(call.closedEarly).toBe(false)
    await expect.poll(async () => (await foldedAnswer(context, baseURL, chat.sessionId()!, answerId))?.finishReason, { timeout: 10_000 }).toBe('stop')

    // The server is back: the Stop lands after the answer's end.
    proxy.reopen()
    const marker = chat.answer(answerId).getByTestId('stopped-marker')
    await expect(marker).toHaveAttribute('data-delivered', 'true', { timeout: 15_000 })
    await expect(chat.connectionStatus).toHaveCount(0, { timeout: 10_000 })
    await expect(chat.answer(answerId)).toHaveAttribute('data-ended', 'stop')
    await expect(chat.answer(answerId)).toHaveAttribute('data-status', 'stopped')
    const note = chat.answer(answerId).getByTestId('finished-before-stop')
    await expect(note).toBeVisible()
    await expect(note).toContainText('had already finished')
    expect(await chat.answerText(answerId)).toBe(shown)
    // From the moment of Stop the page held exactly the cut: the rest was never pushed on screen.
    const history = await recordedFor(page, answerId)
    const stoppedFrom = history.texts.indexOf(shown)
    expect(stoppedFrom).toBeGreaterThanOrEqual(0)
    expect(history.texts.slice(stoppedFrom)).toEqual([shown])
    await page.screenshot({ path: 'test-results/network-finished-before-stop.png' })

    // Offered: the whole answer, on request, and back.
    const showFull = chat.answer(answerId).getByTestId('show-full-answer')
    await expect(showFull).toHaveText('Show the full answer')
    await showFull.click()
    await expect.poll(() => chat.answerText(answerId)).toBe(fullAnswer())
    await showFull.click()
    await expect.poll(() => chat.answerText(answerId)).toBe(shown)

    // A reload, and a second tab, read the same from the server's fold.
    await page.reload()
    await expect(chat.answer(answerId)).toHaveAttribute('data-status', 'stopped')
    await expect(chat.answer(answerId).getByTestId('finished-before-stop')).toBeVisible()
    expect(await chat.answerText(answerId)).toBe(shown)
    const otherChat = new ChatPage(await context.newPage())
    await otherChat.goto(`${proxy.origin}${path}`)
    await expect(otherChat.answer(answerId)).toHaveAttribute('data-status', 'stopped')
    await expect(otherChat.answer(answerId).getByTestId('finished-before-stop')).toBeVisible()
    expect(await otherChat.answerText(answerId)).toBe(shown)
    expect((await recordedFor(otherChat.page, answerId)).texts.filter(Boolean)).toEqual([shown])
  } finally {
    await proxy.close()
  }
})

test('offline says so before anything is sent, on "/" and in a chat, and the notice goes when the browser is back online', async ({
  page,
  context,
}) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  const offline = page.getByTestId('offline-status')
  await expect(offline).toHaveCount(0)
  await context.setOffline(true)
  await expect(offline).toBeVisible()
  await expect(offline).toHaveAttribute('role', 'status')
  await context.setOffline(false)
  await expect(offline).toHaveCount(0)

  await chat.send(nonce('offline notice'))
  await chat.waitForText(3)
  await chat.stop()
  await context.setOffline(true)
  await expect(offline).toBeVisible()
  await context.setOffline(false)
  await expect(offline).toHaveCount(0)
})
