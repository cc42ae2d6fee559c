/**
 * Attachments in real Chromium: files attached by the file chooser, by drag and drop and by
 * paste, each a chip (removable by keyboard) that uploads and then sends with the message; the
 * sent message shows an image as a thumbnail and the others as chips linked to the file, after a
 * reload too; a second device of the account sees them; a share viewer sees them until Stop
 * sharing; another identity gets a 404 for the file. The composer with chips is axe clean.
 */
import { expect, test, type Browser, type Locator, type Page } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { nonce } from './helpers/upstream'
import { seriousViolations } from './helpers/axe'
import { pdf, png, text } from '../test/file-fixtures'

async function device(browser: Browser): Promise<Page> {
  return (await browser.newContext()).newPage()
}

async function fillAccountForm(page: Page, mode: 'Sign in' | 'Create account', email: string, password: string) {
  await page.goto('/account')
  await page.getByRole('tab', { name: mode }).click()
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: mode, exact: true }).last().click()
  await page.waitForURL((url) => url.pathname === '/')
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64')

/** Drops a file on the composer as a person dragging it from their desktop would (dragover, then drop). */
async function dropFile(page: Page, name: string, type: string, bytes: Uint8Array) {
  const dataTransfer = await page.evaluateHandle(
    ({ name, type, data }) => {
      const transfer = new DataTransfer()
      transfer.items.add(new File([Uint8Array.from(atob(data), (c) => c.charCodeAt(0))], name, { type }))
      return transfer
    },
    { name, type, data: b64(bytes) },
  )
  const form = page.getByRole('form', { name: 'Send a message' })
  await form.dispatchEvent('dragover', { dataTransfer })
  await form.dispatchEvent('drop', { dataTransfer })
}

/** Pastes a file into the message box, as a screenshot copied to the clipboard would be. */
async function pasteFile(page: Page, name: string, type: string, bytes: Uint8Array) {
  await page.getByTestId('composer-input').evaluate(
    (box, { name, type, data }) => {
      const transfer = new DataTransfer()
      transfer.items.add(new File([Uint8Array.from(atob(data), (c) => c.charCodeAt(0))], name, { type }))
      box.dispatchEvent(new ClipboardEvent('paste', { clipboardData: transfer, bubbles: true, cancelable: true }))
    },
    { name, type, data: b64(bytes) },
  )
}

/** Whether an <img> was drawn: its bytes arrived and decoded. */
const drawn = (image: Locator) => image.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)

test('files attached by chooser, drop and paste are sent, survive a reload, follow the account, show to a share viewer until revoked, and 404 to others', async ({
  browser,
}) => {
  test.setTimeout(120_000)
  const email = `${nonce('files')}@example.com`.toLowerCase()
  const password = 'correct horse battery'
  const laptopPage = await device(browser)
  await laptopPage.goto('/')
  await fillAccountForm(laptopPage, 'Create account', email, password)
  const laptop = new ChatPage(laptopPage)
  await laptop.goto('/')

  // By the file chooser (the paper-clip button opens it).
  const [chooser] = await Promise.all([laptopPage.waitForEvent('filechooser'), laptopPage.getByRole('button', { name: 'Attach files' }).click()])
  await chooser.setFiles({ name: 'photo.png', mimeType: 'image/png', buffer: Buffer.from(png(24, 16)) })
  // By drag and drop, and by paste.
  await dropFile(laptopPage, 'report.pdf', 'application/pdf', pdf(2))
  await pasteFile(laptopPage, 'notes.txt', 'text/plain', text('first line\nsecond line\n'))
  // One more, removed with the keyboard before sending.
  await dropFile(laptopPage, 'oops.txt', 'text/plain', text('not this one'))
  const chips = laptopPage.getByTestId('attachment-chip')
  await expect(chips).toHaveCount(4)
  await expect(chips.and(laptopPage.locator('[data-status="done"]'))).toHaveCount(4)
  await laptopPage.getByRole('button', { name: 'Remove oops.txt' }).focus()
  await laptopPage.keyboard.press('Enter')
  await expect(chips).toHaveCount(3)
  await expect(laptopPage.getByRole('list', { name: 'Attached files' })).toContainText('report.pdf')
  expect(await seriousViolations(laptopPage)).toEqual([])

  // While a file uploads, its progress bar shows and Cancel takes it away (the upload is held here until then).
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  await laptopPage.route('**/api/files', async (route) => {
    await held
    await route.continue().catch(() => {})
  })
  await dropFile(laptopPage, 'slow.txt', 'text/plain', text('takes a while'))
  await expect(laptopPage.getByRole('progressbar', { name: 'Uploading slow.txt' })).toBeVisible()
  await expect(laptop.sendButton).toBeDisabled()
  await laptopPage.getByRole('button', { name: 'Cancel upload of slow.txt' }).click()
  await expect(chips).toHaveCount(3)
  release()
  await laptopPage.unroute('**/api/files')

  // A file the server will not take says why, in its chip, and holds Send until it is removed.
  await dropFile(laptopPage, 'program.exe', 'application/octet-stream', new Uint8Array([0x4d, 0x5a, 0x90, 0x00, ...new Array(200).fill(1)]))
  const refused = chips.filter({ hasText: 'program.exe' })
  await expect(refused).toHaveAttribute('data-status', 'failed')
  await expect(refused.getByRole('alert')).toContainText('cannot be attached')
  await laptop.input.fill('What are these?')
  await expect(laptop.sendButton).toBeDisabled()
  await laptopPage.getByRole('button', { name: 'Remove program.exe' }).click()

  const words = nonce('files')
  await laptop.send(`What are these? ${words}`)
  const sessionId = laptop.sessionId()!
  const sent = laptop.userMessages.last().getByTestId('message-file')
  await expect(sent).toHaveCount(3)
  await expect(chips).toHaveCount(0)
  const thumbnail = laptop.userMessages.last().getByRole('img', { name: 'photo.png' })
  await expect.poll(() => drawn(thumbnail)).toBe(true)
  const href = (await laptop.userMessages.last().getByRole('link').first().getAttribute('href'))!
  expect(href).toMatch(/^\/api\/files\/[0-9a-f-]{36}$/)
  await expect(laptop.userMessages.last().getByRole('link', { name: /report\.pdf.*PDF/ })).toBeVisible()
  await expect(laptop.userMessages.last().getByRole('link', { name: /notes\.txt.*Text/ })).toBeVisible()

  // After a reload, the same; the page asks for the image's thumbnail, never its original.
  const fileRequests: string[] = []
  laptopPage.on('request', (request) => {
    const url = new URL(request.url())
    if (url.pathname.startsWith('/api/files/')) fileRequests.push(url.pathname + url.search)
  })
  await laptopPage.reload()
  await expect(laptop.userMessages.last().getByTestId('message-file')).toHaveCount(3)
  await expect.poll(() => drawn(laptop.userMessages.last().getByRole('img', { name: 'photo.png' }))).toBe(true)
  expect(fileRequests).toEqual([`${href}?thumb=1`])

  // A second device of the account sees them.
  const phonePage = await device(browser)
  await fillAccountForm(phonePage, 'Sign in', email, password)
  const phone = new ChatPage(phonePage)
  await phone.goto(`/c/${sessionId}`)
  await expect(phone.userMessages.last().getByTestId('message-file')).toHaveCount(3)
  await expect.poll(() => drawn(phone.userMessages.last().getByRole('img', { name: 'photo.png' }))).toBe(true)
  expect((await phonePage.request.get(href)).status()).toBe(200)

  // Another identity: the file is a 404, as if it did not exist.
  const strangerPage = await device(browser)
  const stranger = new ChatPage(strangerPage)
  await stranger.goto('/')
  await stranger.waitForIdentity()
  const theirs = await strangerPage.request.get(href)
  expect(theirs.status()).toBe(404)

  // A share viewer sees them, until the owner stops sharing.
  await laptopPage.getByTestId('share-button').click()
  await laptopPage.getByTestId('share-create').click()
  const link = await laptopPage.getByTestId('share-link').inputValue()
  const viewerPage = await device(browser)
  await viewerPage.goto(link)
  const sharedThumbnail = viewerPage.getByRole('img', { name: 'photo.png' })
  await expect.poll(() => drawn(sharedThumbnail)).toBe(true)
  const sharedSrc = (await sharedThumbnail.getAttribute('src'))!
  expect(sharedSrc).toMatch(/^\/api\/shared\/[A-Za-z0-9_-]{43}\/files\/[0-9a-f-]{36}\?thumb=1$/)
  expect((await viewerPage.request.get(sharedSrc)).status()).toBe(200)
  await laptopPage.getByTestId('share-revoke').click()
  await expect(viewerPage.getByTestId('shared-gone')).toBeVisible({ timeout: 5_000 })
  expect((await viewerPage.request.get(sharedSrc)).status()).toBe(404)
})

test('a fresh browser that attaches a file at once owns it: the upload waits for its identity, and the message sends', async ({ browser }) => {
  const page = await device(browser)
  const chat = new ChatPage(page)
  await chat.goto('/')
  // No waiting for the sidebar: the file is chosen as soon as the box is there.
  const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.getByRole('button', { name: 'Attach files' }).click()])
  await chooser.setFiles({ name: 'first.png', mimeType: 'image/png', buffer: Buffer.from(png(8, 8)) })
  await expect(page.getByTestId('attachment-chip')).toHaveAttribute('data-status', 'done')
  await chat.send(`first visit ${nonce('files')}`)
  await expect.poll(() => drawn(chat.userMessages.last().getByRole('img', { name: 'first.png' }))).toBe(true)
})

test('a photo sent on its own: Send needs no words, the message is the photo, and the chat is named after it', async ({ browser }) => {
  const page = await device(browser)
  const chat = new ChatPage(page)
  await chat.goto('/')
  await chat.waitForIdentity()
  await expect(chat.sendButton).toBeDisabled()
  const name = `${nonce('alone')}.png`
  const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.getByRole('button', { name: 'Attach files' }).click()])
  await chooser.setFiles({ name, mimeType: 'image/png', buffer: Buffer.from(png(12, 12)) })
  await expect(page.getByTestId('attachment-chip')).toHaveAttribute('data-status', 'done')
  await expect(chat.input).toHaveValue('')
  await chat.sendButton.click()
  await page.waitForURL(/\/c\/[^/]+/)
  const sent = chat.userMessages.last()
  await expect.poll(() => drawn(sent.getByRole('img', { name }))).toBe(true)
  await expect(sent.getByTestId('message-text')).toHaveCount(0)
  // The model is asked about it: its answer streams, saying in one line that this model only got the photo's name.
  await chat.waitForStreaming(1)
  await expect(chat.lastAnswer().getByTestId('answer-unseen-images')).toHaveText(
    `openai/upstream-e2e can’t see images, so it was given only their names: ${name}.`,
  )
  await expect(chat.sessionItems.filter({ hasText: name })).toHaveCount(1)
  await chat.stop()
})
