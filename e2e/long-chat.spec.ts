/**
 * A long chat opens at its newest turns: the page renders the latest 60 and a "Show earlier
 * messages" button above them adds 60 more each press, keeping the turns being read where
 * they were; Send and Stop work at its end as in a short one. The history is written
 * straight into the app's Postgres database (test/long-history.ts), so this runs when the
 * suite has one (npm test with TEST_DATABASE_URL, as CI runs it).
 */
import { expect, test } from '@playwright/test'
import { openPostgresStore } from '../lib/a2/server'
import { seedLongHistory } from '../test/long-history'
import { seriousViolations } from './helpers/axe'
import { ChatPage } from './pages/chat'

const DATABASE_URL = process.env.E2E_DATABASE_URL
const ANSWERS = 200 // 400 turns, 4,400 events: past the first screenful many times over
/**
 * 2,270 answers of 22 events: a 49,940-event chat, 4,540 turns, leaving room under the app's
 * 50,000-event cap (A2_MAX_EVENTS_PER_SESSION) for the answer the test stops.
 */
const LONG_ANSWERS = 2_270
const FIRST_SCREEN_BYTES = 256 * 1024

if (DATABASE_URL) {
  test('a long chat opens at its newest turns, shows earlier ones on request in place, and still streams and stops', async ({ page }) => {
    // Its 400 turns took ~100 s to page through at a load of 13 on 2 cores (a budget, not a figure).
    test.setTimeout(240_000)
    const chat = new ChatPage(page)
    await chat.goto('/')
    await chat.waitForIdentity()
    const { session } = await page.evaluate(async () => {
      const response = await fetch('/api/sessions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
      return (await response.json()) as { session: { id: string } }
    })
    const store = await openPostgresStore(DATABASE_URL)
    const { lastAnswer } = await seedLongHistory(store, session.id, { answers: ANSWERS }).finally(() => store.close())

    // The page's HTML carries the latest 20 turns; the rest of the first 60 are added above once the page is idle,
    // the newest answer kept in view.
    const html = await (await page.request.get(`/c/${session.id}`)).text()
    expect(html).toContain('>question 190<')
    expect(html).not.toContain('>question 189<')
    await chat.goto(`/c/${session.id}`)
    const turns = page.locator('ol[aria-label="Conversation"] > li')
    await expect(chat.answer(lastAnswer!)).toBeVisible()
    await expect(turns).toHaveCount(60)
    await expect(chat.answer(lastAnswer!)).toBeInViewport()
    await expect(page.getByText('question 199', { exact: true })).toBeVisible()
    await expect(page.getByText('question 169', { exact: true })).toHaveCount(0) // turn 340: above the window

    expect(await seriousViolations(page), 'with earlier turns not shown').toEqual([])

    // Earlier turns appear above; the turn that was first stays where it was on screen.
    const showEarlier = page.getByTestId('show-earlier')
    const firstShown = page.getByText('question 170', { exact: true }) // turn 340, the first of the latest 60
    await firstShown.scrollIntoViewIfNeeded()
    const topBefore = (await firstShown.boundingBox())!.y
    await showEarlier.click()
    await expect(turns).toHaveCount(120)
    await expect(page.getByText('question 140', { exact: true })).toBeAttached()
    expect(Math.abs((await firstShown.boundingBox())!.y - topBefore)).toBeLessThanOrEqual(2)

    // Down to the first message of the chat, then no button.
    for (let shown = 120; shown < ANSWERS * 2; shown += 60) await showEarlier.click()
    await expect(turns).toHaveCount(ANSWERS * 2)
    await expect(showEarlier).toHaveCount(0)
    await expect(page.getByText('question 0', { exact: true })).toBeAttached()

    // The end of a long chat behaves like a short one: a new answer streams and Stop cuts at what was shown.
    // 2000 tokens (2 min): under load the 400-turn page can take longer than the suite's usual answer to show 20 characters.
    await chat.send('one more question [[tokens 2000]]')
    await chat.waitForStreaming(20)
    const shownText = await chat.stopAndReadShown()
    await chat.waitForStatus('stopped')
    await expect(chat.lastAnswer()).toHaveAttribute('data-ended', 'cancelled')
    expect(await chat.lastAnswerText()).toBe(shownText)
    await page.reload()
    await expect(turns).toHaveCount(60)
    await chat.waitForStatus('stopped')
    expect(await chat.lastAnswerText()).toBe(shownText)
  })
}

if (DATABASE_URL) {
  test('a 50k-event chat opens on under 256 KiB of data, scrolls to its first turn, and a Stop at the bottom cuts exactly', async ({ page }) => {
    test.setTimeout(240_000)
    const chat = new ChatPage(page)
    await chat.goto('/')
    await chat.waitForIdentity()
    const { session } = await page.evaluate(async () => {
      const response = await fetch('/api/sessions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
      return (await response.json()) as { session: { id: string } }
    })
    const store = await openPostgresStore(DATABASE_URL)
    const { head, lastAnswer } = await seedLongHistory(store, session.id, { answers: LONG_ANSWERS }).finally(() => store.close())
    expect(head).toBeGreaterThanOrEqual(49_900)

    // Every response the page receives, with its body's size and when it finished.
    const fetched: Array<{ url: string; kind: string; bytes: number; at: number }> = []
    page.on('requestfinished', (request) => {
      void request
        .sizes()
        .then((sizes) => fetched.push({ url: request.url(), kind: request.resourceType(), bytes: sizes.responseBodySize, at: Date.now() }))
    })
    await chat.goto(`/c/${session.id}`)
    await expect(chat.answer(lastAnswer!)).toBeVisible()
    const paintedAt = Date.now()
    // The chat's data: its page's HTML (which carries the first screen) and whatever the page fetches.
    const data = fetched.filter((f) => f.at <= paintedAt && (f.kind === 'document' || f.kind === 'fetch' || f.kind === 'xhr'))
    const dataBytes = data.reduce((sum, f) => sum + f.bytes, 0)
    const html = data.find((f) => f.kind === 'document' && new URL(f.url).pathname === `/c/${session.id}`)
    const snapshot = data.find((f) => new URL(f.url).pathname === `/api/sessions/${session.id}/snapshot`)
    console.log(
      `[long-chat] ${head} events: ${data.length} data responses, ${dataBytes} bytes before the newest answer showed (the page's HTML ${html?.bytes} bytes); all responses ${fetched.filter((f) => f.at <= paintedAt).reduce((sum, f) => sum + f.bytes, 0)} bytes`,
    )
    expect(html, 'the page arrived').toBeDefined()
    expect(snapshot, 'the first screen came in the page, not fetched after it').toBeUndefined()
    expect(await (await page.request.get(`/c/${session.id}`)).text()).toContain(`question ${LONG_ANSWERS - 1}<`)
    expect(dataBytes).toBeLessThan(FIRST_SCREEN_BYTES)
    const turns = page.locator('ol[aria-label="Conversation"] > li')
    await expect(turns).toHaveCount(60)

    // To the first turn: the link a search result gives (?turn=) loads the pages above, down to it.
    await chat.goto(`/c/${session.id}?turn=e0`)
    const first = page.getByText('question 0', { exact: true })
    await expect(first).toBeInViewport({ timeout: 120_000 })
    await expect(turns).toHaveCount(LONG_ANSWERS * 2)
    await expect(page.getByTestId('show-earlier')).toHaveCount(0)

    // At the bottom, a new answer streams and Stop cuts at what was shown, here and after a reload.
    // The chat is opened again for it: the first screen is what a reader at the bottom has.
    await chat.goto(`/c/${session.id}`)
    await expect(turns).toHaveCount(60)
    await chat.send('one more question [[tokens 2000]]') // streams past every step below, however loaded the machine
    await chat.waitForStreaming(20)
    const shownText = await chat.stopAndReadShown()
    await chat.waitForStatus('stopped')
    await expect(chat.lastAnswer()).toHaveAttribute('data-ended', 'cancelled')
    expect(await chat.lastAnswerText()).toBe(shownText)
    await page.reload()
    await expect(turns).toHaveCount(60)
    await chat.waitForStatus('stopped')
    expect(await chat.lastAnswerText()).toBe(shownText)
  })
}
