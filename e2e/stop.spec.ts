/**
 * The promise of the product, in a real browser: Stop cuts exactly at what the page
 * showed, the upstream model request closes, and a reload shows the same cut.
 */
import { expect, test, type Page } from '@playwright/test'
import { upstreamCalls, waitForUpstream } from './helpers/upstream'
import { ChatPage } from './pages/chat'

const answer = (page: Page) => page.getByTestId('message-assistant').last()

test('Stop cuts exactly at what was shown, closes the upstream request, and survives a reload', async ({ page }) => {
  const before = (await upstreamCalls()).length
  await page.goto('/')
  await page.getByTestId('composer-input').fill('Tell me about cancellation in AI apps')
  await page.getByTestId('send-button').click()
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}/)

  // Tokens stream in.
  await expect(answer(page)).toHaveAttribute('data-status', 'streaming')
  await expect.poll(async () => (await answer(page).getByTestId('answer-text').innerText()).length).toBeGreaterThan(40)
  const grows = (await answer(page).getByTestId('answer-text').innerText()).length
  await expect.poll(async () => (await answer(page).getByTestId('answer-text').innerText()).length).toBeGreaterThan(grows)

  const shown = await new ChatPage(page).stopAndReadShown() // read and Stop in one task: no token lands between
  await expect(answer(page)).toHaveAttribute('data-status', 'stopped')
  await expect(answer(page).getByTestId('stopped-marker')).toBeVisible()
  // The run's terminal event has reached the page: every chunk it wrote is in, and none showed.
  await expect(answer(page)).toHaveAttribute('data-ended', 'cancelled')
  expect((await answer(page).getByTestId('answer-text').innerText()).trim()).toBe(shown)

  // The upstream model server saw its request close early.
  const requests = await waitForUpstream((all) => all.length > before && all.at(-1)!.closedAt !== undefined)
  expect(requests.at(-1)!.closedEarly).toBe(true)

  await page.screenshot({ path: 'test-results/stopped.png' })
  await page.reload()
  await expect(answer(page)).toHaveAttribute('data-status', 'stopped')
  expect((await answer(page).getByTestId('answer-text').innerText()).trim()).toBe(shown)
  await expect(page.getByTestId('composer-input')).toBeEnabled()

  // The operator view explains the run: cancelled, its history, and the model call as an effect.
  await page.goto('/runs')
  const run = page.getByTestId('run-row').first()
  await expect(run).toHaveAttribute('data-status', 'CANCELLED')
  await run.getByRole('button').first().click()
  const detail = page.getByTestId('run-detail')
  await expect(detail.getByTestId('transition').filter({ hasText: 'CANCEL_APPENDED' })).toBeVisible()
  await expect(detail.getByTestId('transition').filter({ hasText: 'STOPPED_BY_CANCEL' })).toBeVisible()
  // The model call the Stop closed reads as stopped, not as a red FAILED.
  await expect(detail.getByTestId('effect').filter({ hasText: 'model' }).getByTestId('status-badge')).toHaveText('STOPPED')
  await page.screenshot({ path: 'test-results/runs.png' })
})
