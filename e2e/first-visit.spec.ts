/**
 * A first visit that does not start at "/": a fresh browser (no identity yet, so no chats)
 * opening /runs or /notes from a link sees the page's empty state, not the API's
 * "no identity" refusal, and not "Loading…" for ever. And /runs' links say where they go.
 */
import { expect, test } from '@playwright/test'
import { ChatPage } from './pages/chat'
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
