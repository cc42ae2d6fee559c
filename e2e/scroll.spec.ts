/**
 * Following the answer while it streams, and letting go of it: a reader who scrolls up,
 * even a few pixels at a time as a trackpad does, stays where they scrolled to; the
 * conversation no longer pulls them back down with each chunk.
 */
import { expect, test, type Page } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { nonce } from './helpers/upstream'

test.use({ viewport: { width: 390, height: 844 } })

/** The conversation's scroll position and how far it can go. */
function scrollOf(page: Page): Promise<{ top: number; max: number }> {
  return page.evaluate(() => {
    const el = document.querySelector('ol[aria-label="Conversation"]')!.closest<HTMLElement>('.overflow-y-auto')!
    return { top: el.scrollTop, max: el.scrollHeight - el.clientHeight }
  })
}

test('scrolling up by small steps while the answer streams stops following at once: no chunk pulls the reader back down', async ({ page }) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  // A message taller than the screen, so the conversation scrolls from the first chunk.
  await chat.send([nonce('scroll'), ...Array.from({ length: 40 }, (_, i) => `line ${i + 1}`)].join('\n'))
  await chat.waitForStreaming(20)
  const start = await scrollOf(page)
  expect(start.max - start.top).toBeLessThanOrEqual(1) // following the answer

  const box = (await chat.userMessages.first().boundingBox())!
  await page.mouse.move(box.x + box.width / 2, 300)
  // The first step leaves the bottom (the answer may have pulled it down before the wheel).
  await page.mouse.wheel(0, -8)
  await expect.poll(async () => ((s) => s.max - s.top)(await scrollOf(page))).toBeGreaterThan(0)
  let seen = (await scrollOf(page)).top
  for (let step = 0; step < 4; step++) {
    await page.mouse.wheel(0, -8)
    await expect.poll(async () => (await scrollOf(page)).top).toBeLessThan(seen)
    seen = (await scrollOf(page)).top
  }
  // More of the answer arrives; where the reader scrolled to holds.
  const length = (await chat.lastAnswerText()).length
  await expect.poll(async () => (await chat.lastAnswerText()).length).toBeGreaterThan(length + 40)
  expect((await scrollOf(page)).top).toBe(seen)
  await expect(page.getByRole('button', { name: 'Jump to latest message' })).toBeVisible()
  await chat.stop()
})

test('a small step up in the same frame as a chunk being followed still lets go: the follow does not read as the reader moving down', async ({
  page,
}) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  await chat.send([nonce('scroll-frame'), ...Array.from({ length: 40 }, (_, i) => `line ${i + 1}`)].join('\n'))
  await chat.waitForStreaming(20)
  const box = (await chat.userMessages.first().boundingBox())!
  await page.mouse.move(box.x + box.width / 2, 300)
  // What a loaded machine does by chance, forced: the page's main thread is held while chunks
  // arrive (one every 60 ms) and the wheel is sent, so the chunk's follow down to the bottom
  // and the wheel's 8 px up reach the page in one frame, one scroll event.
  const stall = page.evaluate(() => {
    const end = performance.now() + 400
    while (performance.now() < end);
  })
  await page.mouse.wheel(0, -8)
  await stall
  await expect.poll(async () => ((s) => s.max - s.top)(await scrollOf(page))).toBeGreaterThan(0)
  // Left for good: more of the answer arrives and the reader's place holds.
  const seen = (await scrollOf(page)).top
  const length = (await chat.lastAnswerText()).length
  await expect.poll(async () => (await chat.lastAnswerText()).length).toBeGreaterThan(length + 40)
  expect((await scrollOf(page)).top).toBe(seen)
  await expect(page.getByRole('button', { name: 'Jump to latest message' })).toBeVisible()
  await chat.stop()
})
