/**
 * An accessibility check with axe-core on the pages a person uses — "/", a chat with a
 * finished and a stopped answer, /runs, /notes, the account page signed out and in (with the
 * notice a sign-up leaves), and a chat that isn't available — in light and dark: no serious or
 * critical violation. (WCAG 2.x A and AA rules, plus axe's best practices.)
 */
import { expect, test } from '@playwright/test'
import { seriousViolations } from './helpers/axe'
import { ChatPage } from './pages/chat'
import { nonce } from './helpers/upstream'

for (const colorScheme of ['light', 'dark'] as const) {
  test.describe(`${colorScheme}`, () => {
    test.use({ colorScheme, viewport: { width: 1280, height: 800 } })

    test(`"/" has no serious accessibility violations (${colorScheme})`, async ({ page }) => {
      await new ChatPage(page).goto('/')
      await expect(page.getByTestId('session-item').or(page.getByText('No chats yet'))).not.toHaveCount(0)
      expect(await seriousViolations(page)).toEqual([])
    })

    test(`a chat with a finished and a stopped answer has no serious accessibility violations (${colorScheme})`, async ({ page }) => {
      const chat = new ChatPage(page)
      await chat.goto('/')
      await chat.send(nonce('a11y stopped'))
      await chat.waitForText(20)
      await chat.stop()
      await chat.send(nonce('a11y streaming'))
      await chat.waitForStreaming(20)
      expect(await seriousViolations(page), 'while streaming').toEqual([])
      await chat.stop()
      await expect(chat.lastAnswer().getByTestId('stopped-marker')).toBeVisible()
      expect(await seriousViolations(page), 'stopped').toEqual([])
    })

    // /runs may become operator-only: then this check signs in as an operator first.
    test(`/runs has no serious accessibility violations (${colorScheme})`, async ({ page }) => {
      await page.goto('/runs')
      await expect(page.getByRole('heading').first()).toBeVisible()
      expect(await seriousViolations(page)).toEqual([])
    })

    test(`/notes has no serious accessibility violations (${colorScheme})`, async ({ page }) => {
      // Opened cold (no identity yet: no notes either), then as someone who has used the app.
      await page.goto('/notes')
      await expect(page.getByText('No notes yet')).toBeVisible()
      expect(await seriousViolations(page), 'cold').toEqual([])
      // The identity comes with the chat list's answer, not with the composer showing.
      const chat = new ChatPage(page)
      await chat.goto('/')
      await chat.waitForIdentity()
      await page.goto('/notes')
      await expect(page.getByText('No notes yet')).toBeVisible()
      expect(await seriousViolations(page), 'empty').toEqual([])
    })

    test(`/account, signed out and in, the notice after signing up, and a chat that isn’t available have no serious accessibility violations (${colorScheme})`, async ({
      page,
    }) => {
      await page.goto('/account')
      await page.getByRole('tab', { name: 'Create account' }).click()
      await expect(page.getByText('At least 10 characters')).toBeVisible()
      expect(await seriousViolations(page), 'signing up').toEqual([])
      await page.getByLabel('Email').fill(`${nonce('a11y')}@example.com`.toLowerCase())
      await page.getByLabel('Password').fill('a password for now')
      await page.getByRole('button', { name: 'Create account', exact: true }).last().click()
      await page.waitForURL((url) => url.pathname === '/')
      await expect(page.getByTestId('account-notice')).toContainText('Account created')
      expect(await seriousViolations(page), 'the notice').toEqual([])
      await page.goto('/account')
      await expect(page.getByTestId('account-email')).toBeVisible()
      expect(await seriousViolations(page), 'signed in').toEqual([])
      await page.getByRole('button', { name: 'Sign out', exact: true }).click()
      await page.waitForURL((url) => url.pathname === '/')
      await page.goto(`/c/${crypto.randomUUID()}`)
      await expect(page.getByTestId('chat-not-found').getByRole('link', { name: 'Sign in' })).toBeVisible()
      expect(await seriousViolations(page), 'not available').toEqual([])
    })
  })
}

test.describe('on a phone', () => {
  test.use({ viewport: { width: 390, height: 844 } })

  test('the open drawer has no serious accessibility violations', async ({ page }) => {
    await new ChatPage(page).goto('/')
    await page.getByRole('button', { name: 'Open sidebar' }).click()
    await expect(page.locator('#sidebar')).toBeVisible()
    expect(await seriousViolations(page)).toEqual([])
  })
})
