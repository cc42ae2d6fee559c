/**
 * Accounts across devices, in real Chromium: a guest's chat moves into the account they
 * create; a second browser signed into it lists that chat, opens it while an answer started
 * on the first streams, and its Stop cuts the answer exactly at what the second browser
 * showed, on both devices and after reloads. Signing out leaves a new guest with no chats.
 */
import { expect, test, type Browser, type Page } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { nonce, upstreamCalls, waitForUpstream } from './helpers/upstream'

async function device(browser: Browser): Promise<Page> {
  const context = await browser.newContext()
  return context.newPage()
}

async function fillAccountForm(page: Page, mode: 'Sign in' | 'Create account', email: string, password: string) {
  await page.goto('/account')
  await page.getByRole('tab', { name: mode }).click()
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: mode, exact: true }).last().click()
  await page.waitForURL((url) => url.pathname === '/')
}

test('a chat follows its account to a second browser, whose Stop cuts exactly at what it showed', async ({ browser }) => {
  const email = `${nonce('ada')}@example.com`.toLowerCase()
  const password = 'correct horse battery'

  // The laptop starts as a guest, as every first visit does, and makes a chat.
  const laptop = new ChatPage(await device(browser))
  await laptop.goto('/')
  const first = nonce('guest')
  await laptop.send(first)
  await laptop.waitForStreaming(5)
  await laptop.stop()
  const sessionId = laptop.sessionId()!

  // Creating an account keeps that chat.
  await fillAccountForm(laptop.page, 'Create account', email, password)
  await expect(laptop.page.getByTestId('account-name')).toHaveText(email)
  await expect(laptop.sessionItems).toHaveCount(1)
  await laptop.goto(`/c/${sessionId}`)
  await expect(laptop.userTexts).toHaveText([first])

  // An answer starts on the laptop.
  const before = (await upstreamCalls()).length
  const second = nonce('laptop')
  await laptop.send(second)
  await laptop.waitForStreaming(20)
  const answerId = await laptop.lastAnswerId()

  // The phone signs in, lists the chat, and opens it mid-answer: it streams live there too.
  const phone = new ChatPage(await device(browser))
  await fillAccountForm(phone.page, 'Sign in', email, password)
  await expect(phone.sessionItems).toHaveCount(1)
  await phone.goto(`/c/${sessionId}`)
  await expect(phone.answer(answerId)).toHaveAttribute('data-status', 'streaming')
  const start = (await phone.answerText(answerId)).length
  await expect.poll(async () => (await phone.answerText(answerId)).length).toBeGreaterThan(start + 20)

  // The phone's Stop: the cut is what the phone showed, on the phone and on the laptop.
  const shown = await phone.stopAndReadShown()
  await expect(phone.answer(answerId)).toHaveAttribute('data-ended', 'cancelled')
  await expect(laptop.answer(answerId)).toHaveAttribute('data-ended', 'cancelled')
  expect(await phone.answerText(answerId)).toBe(shown)
  expect(await laptop.answerText(answerId)).toBe(shown)
  const requests = await waitForUpstream((all) => all.length > before && all.at(-1)!.closedAt !== undefined)
  expect(requests.at(-1)!.closedEarly).toBe(true)

  for (const page of [phone.page, laptop.page]) {
    await page.reload()
    const chat = new ChatPage(page)
    await expect(chat.answer(answerId)).toHaveAttribute('data-status', 'stopped')
    expect(await chat.answerText(answerId)).toBe(shown)
  }

  // Signing out on the phone leaves a new guest there, with none of the account's chats.
  await phone.page.goto('/account')
  await phone.page.getByRole('button', { name: 'Sign out' }).click()
  await phone.page.waitForURL((url) => url.pathname === '/')
  await expect(phone.page.getByTestId('account-name')).toHaveText('Sign in')
  await expect(phone.page.getByText('No chats yet')).toBeVisible()
  expect((await phone.page.request.get(`/api/sessions/${sessionId}/snapshot`)).status()).toBe(404)
})

test('a passkey made on a virtual authenticator signs in, and the guest chat made before it joins the account', async ({ browser, baseURL }) => {
  // WebAuthn refuses an IP address as its relying party: this test addresses the app as localhost, the default RP id.
  const context = await browser.newContext({ baseURL: baseURL!.replace('127.0.0.1', 'localhost') })
  const page = await context.newPage()
  const cdp = await context.newCDPSession(page)
  await cdp.send('WebAuthn.enable')
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  })
  const email = `${nonce('pk')}@example.com`.toLowerCase()

  await fillAccountForm(page, 'Create account', email, 'a password for now')
  await page.goto('/account')
  await expect(page.getByTestId('passkey-count')).toHaveText('No passkeys yet.')
  await page.getByRole('button', { name: 'Add a passkey' }).click()
  await expect(page.getByRole('status')).toHaveText(/Passkey added/)
  await expect(page.getByTestId('passkey-count')).toHaveText('1 passkey.')
  expect((await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials).toHaveLength(1)

  // Signed out, this browser is a guest again, and makes a chat.
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.waitForURL((url) => url.pathname === '/')
  const chat = new ChatPage(page)
  await chat.goto('/')
  const asGuest = nonce('before-passkey')
  await chat.send(asGuest)
  await chat.waitForStreaming(5)
  await chat.stop()

  // The passkey signs in (no password typed), and the guest's chat is the account's now.
  await page.goto('/account')
  await page.getByRole('button', { name: 'Sign in with a passkey' }).click()
  await page.waitForURL((url) => url.pathname === '/')
  await expect(page.getByTestId('account-name')).toHaveText(email)
  await expect(chat.sessionItems).toHaveCount(1)
  await chat.sessionItems.first().click()
  await expect(chat.userTexts).toHaveText([asGuest])
  await context.close()
})
