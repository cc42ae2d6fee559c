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

  // The rule a password must meet is said before the browser complains.
  await laptop.page.goto('/account')
  await laptop.page.getByRole('tab', { name: 'Create account' }).click()
  await expect(laptop.page.getByLabel('Password')).toHaveAccessibleDescription(/At least 10 characters/)

  // Creating an account keeps that chat, and the page it lands on says what happened.
  await fillAccountForm(laptop.page, 'Create account', email, password)
  await expect(laptop.page.getByTestId('account-name')).toHaveText(email)
  await expect(laptop.page.getByTestId('account-notice')).toContainText(`Account created: you are signed in as ${email}`)
  // The unverified email is said in a user's words, not the operator's.
  await laptop.page.goto('/account')
  await expect(laptop.page.getByTestId('account-verified')).toHaveText(/not verified yet: open the link we email/)
  await expect(laptop.page.getByRole('main')).not.toContainText(/queue|outbox/i)
  await expect(laptop.page.getByRole('button', { name: 'Email me another link' })).toBeVisible()
  // "Delete account…" stands well apart from "Sign out".
  const signOutBox = (await laptop.page.getByRole('button', { name: 'Sign out', exact: true }).boundingBox())!
  const deleteBox = (await laptop.page.getByRole('button', { name: 'Delete account…' }).boundingBox())!
  expect(deleteBox.y - (signOutBox.y + signOutBox.height)).toBeGreaterThanOrEqual(32)
  await laptop.goto('/')
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
  // Before signing in, the account's chat is not this browser's: the page offers to sign in.
  await phone.page.goto(`/c/${sessionId}`)
  await expect(phone.notFound).toBeVisible()
  await expect(phone.notFound).not.toContainText('belong to the browser')
  await expect(phone.notFound).toContainText('If it is in your account, sign in to open it')
  await expect(phone.notFound.getByRole('link', { name: 'Sign in' })).toHaveAttribute('href', '/account')
  await fillAccountForm(phone.page, 'Sign in', email, password)
  await expect(phone.page.getByTestId('account-notice')).toContainText(`Signed in as ${email}`)
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
  await phone.page.getByRole('button', { name: 'Sign out', exact: true }).click()
  await phone.page.waitForURL((url) => url.pathname === '/')
  await expect(phone.page.getByTestId('account-notice')).toContainText('Signed out')
  await expect(phone.page.getByTestId('account-name')).toHaveText('Sign in')
  await expect(phone.page.getByText('No chats yet')).toBeVisible()
  expect((await phone.page.request.get(`/api/sessions/${sessionId}/snapshot`)).status()).toBe(404)
})

test('signing out on all devices signs the other browser out too, at its next request', async ({ browser }) => {
  const email = `${nonce('everywhere')}@example.com`.toLowerCase()
  const password = 'correct horse battery'
  const laptop = new ChatPage(await device(browser))
  await laptop.goto('/')
  await laptop.send(nonce('kept'))
  await laptop.waitForStreaming(5)
  await laptop.stop()
  await fillAccountForm(laptop.page, 'Create account', email, password)
  const phone = new ChatPage(await device(browser))
  await fillAccountForm(phone.page, 'Sign in', email, password)
  await expect(phone.sessionItems).toHaveCount(1)

  await laptop.page.goto('/account')
  await laptop.page.getByRole('button', { name: 'Sign out on all devices' }).click()
  await laptop.page.waitForURL((url) => url.pathname === '/')
  for (const page of [laptop.page, phone.page]) {
    await page.reload()
    await expect(page.getByTestId('account-name')).toHaveText('Sign in')
    await expect(page.getByText('No chats yet')).toBeVisible()
  }
})

test('a passkey made on a virtual authenticator signs in, and the guest chat made before it joins the account', async ({ browser, baseURL }) => {
  // WebAuthn refuses an IP address as its relying party: the app is addressed as localhost, the default RP id.
  const { context, page, cdp, authenticatorId } = await withAuthenticator(browser, baseURL!)
  const email = `${nonce('pk')}@example.com`.toLowerCase()

  await fillAccountForm(page, 'Create account', email, 'a password for now')
  await page.goto('/account')
  await expect(page.getByTestId('passkey-count')).toHaveText('No passkeys yet.')
  await page.getByRole('button', { name: 'Add a passkey' }).click()
  await expect(page.getByRole('main').getByRole('status')).toHaveText(/Passkey added/)
  await expect(page.getByTestId('passkey-count')).toHaveText('1 passkey.')
  // Listed by the name of the device it was made on (the browser and system it reported), not only counted.
  await expect(page.getByTestId('passkey')).toHaveCount(1)
  await expect(page.getByTestId('passkey')).toContainText(/\S+ · added /)
  expect((await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials).toHaveLength(1)

  // Signed out, this browser is a guest again, and makes a chat.
  await page.getByRole('button', { name: 'Sign out', exact: true }).click()
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

/** A context at `localhost` (WebAuthn's relying party) with a virtual authenticator of its own. */
async function withAuthenticator(browser: Browser, baseURL: string) {
  const context = await browser.newContext({ baseURL: baseURL.replace('127.0.0.1', 'localhost') })
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
  return { context, page, cdp, authenticatorId }
}

test('the whole path: a guest signs up, a second browser signs in by passkey and stops the answer, a share link shows it, and deleting the account erases it', async ({
  browser,
  baseURL,
}) => {
  test.setTimeout(120_000)
  const laptop = await withAuthenticator(browser, baseURL!)
  const phone = await withAuthenticator(browser, baseURL!)
  const email = `${nonce('path')}@example.com`.toLowerCase()

  // 1–2. A guest chats, then signs up: the chat is kept. A passkey is added on the laptop.
  const onLaptop = new ChatPage(laptop.page)
  await onLaptop.goto('/')
  const first = nonce('guest')
  await onLaptop.send(first)
  await onLaptop.waitForStreaming(5)
  await onLaptop.stop()
  const sessionId = onLaptop.sessionId()!
  await fillAccountForm(laptop.page, 'Create account', email, 'a password for now')
  await expect(onLaptop.sessionItems).toHaveCount(1)
  await laptop.page.goto('/account')
  await laptop.page.getByRole('button', { name: 'Add a passkey' }).click()
  await expect(laptop.page.getByTestId('passkey-count')).toHaveText('1 passkey.')

  // The passkey travels to the phone's authenticator, as a synced passkey does.
  const [credential] = (await laptop.cdp.send('WebAuthn.getCredentials', { authenticatorId: laptop.authenticatorId })).credentials
  await phone.cdp.send('WebAuthn.addCredential', { authenticatorId: phone.authenticatorId, credential })

  // 3. The phone signs in with the passkey and sees the chat.
  await phone.page.goto('/account')
  await phone.page.getByRole('button', { name: 'Sign in with a passkey' }).click()
  await phone.page.waitForURL((url) => url.pathname === '/')
  await expect(phone.page.getByTestId('account-name')).toHaveText(email)
  const onPhone = new ChatPage(phone.page)
  await expect(onPhone.sessionItems).toHaveCount(1)

  // 4. An answer started on the laptop; the phone opens it and presses Stop: one cut on both, after reloads too, and the run CANCELLED.
  await onLaptop.goto(`/c/${sessionId}`)
  await onLaptop.send(nonce('laptop'))
  await onLaptop.waitForStreaming(20)
  const answerId = await onLaptop.lastAnswerId()
  await onPhone.goto(`/c/${sessionId}`)
  await expect(onPhone.answer(answerId)).toHaveAttribute('data-status', 'streaming')
  const shown = await onPhone.stopAndReadShown()
  for (const chat of [onPhone, onLaptop]) {
    await expect(chat.answer(answerId)).toHaveAttribute('data-ended', 'cancelled')
    expect(await chat.answerText(answerId)).toBe(shown)
    await chat.page.reload()
    await expect(chat.answer(answerId)).toHaveAttribute('data-status', 'stopped')
    expect(await chat.answerText(answerId)).toBe(shown)
  }
  const runs = (await (await phone.page.request.get('/api/runs')).json()) as { runs: Array<{ eventId: string; status: string }> }
  expect(runs.runs.find((r) => r.eventId === answerId)?.status).toBe('CANCELLED')

  // 5. A share link shows the chat live to a signed-out browser; revoking it ends that view.
  await laptop.page.getByTestId('share-button').click()
  await laptop.page.getByTestId('share-create').click()
  const link = await laptop.page.getByTestId('share-link').inputValue()
  const viewerContext = await browser.newContext()
  const viewer = new ChatPage(await viewerContext.newPage())
  await viewer.page.goto(link)
  expect(await viewer.answerText(answerId)).toBe(shown)
  await onLaptop.send(nonce('live'))
  await onLaptop.waitForStreaming(5)
  const live = await onLaptop.lastAnswerId()
  await expect(viewer.answer(live)).toHaveAttribute('data-status', 'streaming')
  await onLaptop.stop()
  await laptop.page.getByTestId('share-revoke').click()
  await expect(viewer.page.getByTestId('shared-gone')).toBeVisible({ timeout: 5_000 })

  // 6. Deleting the account: the phone is signed out, the chat and the link read nothing.
  await laptop.page.goto('/account')
  await laptop.page.getByRole('button', { name: 'Delete account…' }).click()
  await laptop.page.getByRole('button', { name: 'Delete the account' }).click()
  await laptop.page.waitForURL((url) => url.pathname === '/')
  await expect(laptop.page.getByTestId('account-notice')).toContainText('Account deleted, with every chat in it')
  await expect(laptop.page.getByTestId('account-name')).toHaveText('Sign in')
  await phone.page.reload()
  await expect(phone.page.getByTestId('account-name')).toHaveText('Sign in')
  // No identity yet (401) or a new guest's (404): either way the chat reads nothing.
  expect([401, 404]).toContain((await phone.page.request.get(`/api/sessions/${sessionId}/snapshot`)).status())
  const DATABASE_URL = process.env.E2E_DATABASE_URL
  if (DATABASE_URL) {
    // On Postgres (E2E_DATABASE_URL, which npm test sets when TEST_DATABASE_URL is): no row of the account in any table.
    const { default: postgres } = await import('postgres')
    const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
    try {
      const columns = await sql<Array<{ table_name: string; column_name: string }>>`
        select table_name, column_name from information_schema.columns
        where table_schema = 'public' and data_type in ('text', 'jsonb', 'json', 'character varying')`
      const found: string[] = []
      for (const { table_name, column_name } of columns) {
        const [{ n }] = await sql<
          Array<{ n: number }>
        >`select count(*)::int as n from ${sql(table_name)} where lower(${sql(column_name)}::text) like ${`%${email}%`} or ${sql(column_name)}::text like ${`%${sessionId}%`}`
        if (n > 0) found.push(`${table_name}.${column_name}: ${n}`)
      }
      expect(found).toEqual([])
    } finally {
      await sql.end()
    }
  }
  await Promise.all([laptop.context.close(), phone.context.close(), viewerContext.close()])
})

/** Presses "Sign in with a passkey" and waits for the session refresh that follows the server's answer (it rebuilt the form). */
async function signInWithPasskeyRefused(page: Page) {
  await page.goto('/account')
  const verified = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/auth/passkey/verify-authentication')
  const refreshed = verified.then(() => page.waitForResponse((r) => new URL(r.url()).pathname === '/api/auth/get-session'))
  await page.getByRole('button', { name: 'Sign in with a passkey' }).click()
  expect((await verified).status()).toBe(401)
  await refreshed
  await expect(page.getByText('Loading…')).toHaveCount(0)
}

const NO_ACCOUNT = /This passkey belongs to no account here: the account was deleted, or the passkey was removed from it/

test('a deleted account’s passkey, tried at sign-in, says it belongs to no account, and the message stays', async ({ browser, baseURL }) => {
  const { context, page } = await withAuthenticator(browser, baseURL!)
  await fillAccountForm(page, 'Create account', `${nonce('gone')}@example.com`.toLowerCase(), 'a password for now')
  await page.goto('/account')
  await page.getByRole('button', { name: 'Add a passkey' }).click()
  await expect(page.getByTestId('passkey-count')).toHaveText('1 passkey.')
  await page.getByRole('button', { name: 'Delete account…' }).click()
  await page.getByRole('button', { name: 'Delete the account' }).click()
  await page.waitForURL((url) => url.pathname === '/')

  // The authenticator still holds the passkey; the server refuses it (401 PASSKEY_NOT_FOUND).
  await signInWithPasskeyRefused(page)
  await expect(page.getByRole('main').getByRole('alert')).toHaveText(NO_ACCOUNT)
  await expect(page.getByRole('button', { name: 'Sign in with a passkey' })).toBeVisible()
  await context.close()
})

test('a lost device’s passkey is removed by its name, and then signs in no more, saying so', async ({ browser, baseURL }) => {
  const { context, page } = await withAuthenticator(browser, baseURL!)
  const email = `${nonce('lost')}@example.com`.toLowerCase()
  await fillAccountForm(page, 'Create account', email, 'a password for now')
  await page.goto('/account')
  await page.getByRole('button', { name: 'Add a passkey' }).click()
  await expect(page.getByTestId('passkey')).toHaveCount(1)
  const name = (await page.getByTestId('passkey').innerText()).split(' · ')[0].trim()
  await page.getByRole('button', { name: `Remove the passkey ${name}` }).click()
  await expect(page.getByTestId('passkey')).toHaveCount(0)
  await expect(page.getByTestId('passkey-count')).toHaveText('No passkeys yet.')
  await expect(page.getByRole('main').getByRole('status').filter({ hasText: 'removed' })).toContainText('it signs in to this account no more')

  await page.getByRole('button', { name: 'Sign out', exact: true }).click()
  await page.waitForURL((url) => url.pathname === '/')
  await signInWithPasskeyRefused(page)
  await expect(page.getByRole('main').getByRole('alert')).toHaveText(NO_ACCOUNT)
  await context.close()
})

test('with no passkey for this site on this device, "Sign in with a passkey" says so, not "Auth cancelled"', async ({ browser, baseURL }) => {
  const { context, page } = await withAuthenticator(browser, baseURL!)
  await page.goto('/account')
  await page.getByRole('button', { name: 'Sign in with a passkey' }).click()
  await expect(page.getByRole('main').getByRole('alert')).toHaveText(
    /No passkey was used: this device has none for this site, or the prompt was closed/,
  )
  await expect(page.getByRole('main')).not.toContainText('Auth cancelled')
  await context.close()
})
