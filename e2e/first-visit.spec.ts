/**
 * A first visit that does not start at "/": a fresh browser (no identity yet, so no chats)
 * opening /runs or /notes from a link sees the page's empty state, not the API's
 * "no identity" refusal, and not "Loading…" for ever. And /runs' links say where they go.
 */
import { expect, test, type Page } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { Sidebar } from './pages/sidebar'
import { nonce } from './helpers/upstream'

test('a fresh browser opening /runs first sees "No runs yet", with no error and no endless Loading…', async ({ page }) => {
  await page.goto('/runs')
  await expect(page.getByText('No runs yet: send a message in a chat.')).toBeVisible()
  await expect(page.getByText('Loading…')).toHaveCount(0)
  await expect(page.locator('main').getByRole('alert')).toHaveCount(0)
  await expect(page.locator('main')).not.toContainText('no identity')
})

test('a fresh browser opening /notes first sees "No notes yet", with no error', async ({ page }) => {
  await page.goto('/notes')
  await expect(page.getByText(/^No notes yet/)).toBeVisible()
  await expect(page.locator('main').getByRole('alert')).toHaveCount(0)
  await expect(page.locator('main')).not.toContainText('no identity')
})

test('on /runs each chat link says which run’s chat it opens, not only "open"', async ({ page }) => {
  const chat = new ChatPage(page)
  await chat.goto('/')
  await chat.send(nonce('runs link name'))
  await chat.waitForText(3)
  await chat.stop()
  await page.goto('/runs')
  const row = page.getByTestId('run-row').first()
  const run = (await row.getByRole('button').innerText()).match(/#\d+/)![0]
  await expect(row.getByRole('link')).toHaveAccessibleName(`Open the chat of run ${run}`)
  await expect(row.getByRole('link')).toHaveText('open')
})

test('two tabs of a fresh browser opened at the same moment end up with one identity: a chat made in one is in the other', async ({ context }) => {
  // Each tab's first list mints an identity when it carries no cookie, and the last Set-Cookie
  // wins. Hold the first list at the server's door until the other tab's is on its way too:
  // at the door as well (then both go on at once, each without a cookie), or waiting for the
  // tabs' lock (then the first goes on alone).
  let atTheDoor = 0
  let openTheDoor!: () => void
  const bothAtTheDoor = new Promise<void>((resolve) => (openTheDoor = resolve))
  const listWaitsForTheLock = async () =>
    (
      await Promise.all(
        context
          .pages()
          .map((p) =>
            p
              .evaluate(async () => (await navigator.locks.query()).pending?.some((lock) => lock.name === 'a2.first-list') ?? false)
              .catch(() => false),
          ),
      )
    ).some(Boolean)
  await context.route('**/api/sessions', async (route) => {
    if (route.request().method() !== 'GET') return route.continue()
    if (++atTheDoor >= 2) openTheDoor()
    await Promise.race([bothAtTheDoor, expect.poll(listWaitsForTheLock, { timeout: 15_000 }).toBe(true)])
    await route.continue()
  })
  const minted: string[] = []
  context.on('response', async (response) => {
    const headers = await response.headersArray().catch(() => [])
    if (headers.some((h) => h.name.toLowerCase() === 'set-cookie' && /a2_uid=/.test(h.value))) minted.push(response.url())
  })
  const [a, b] = [await context.newPage(), await context.newPage()]
  const listed = (page: Page) => page.waitForResponse((r) => new URL(r.url()).pathname === '/api/sessions' && r.request().method() === 'GET')
  await Promise.all([listed(a), listed(b), new ChatPage(a).goto('/'), new ChatPage(b).goto('/')])
  await context.unroute('**/api/sessions')
  expect(minted, 'identities minted').toHaveLength(1)

  const chatA = new ChatPage(a)
  await chatA.send(nonce('one identity'))
  await chatA.waitForText(3)
  await chatA.stop()
  await b.reload()
  await expect(new Sidebar(b).item(chatA.sessionId()!)).toBeVisible()
})
