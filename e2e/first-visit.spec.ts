/**
 * A first visit that does not start at "/": a fresh browser (no identity yet, so no chats)
 * opening /runs or /notes from a link sees the page's empty state, not the API's
 * "no identity" refusal, and not "Loading…" for ever.
 */
import { expect, test } from '@playwright/test'

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
