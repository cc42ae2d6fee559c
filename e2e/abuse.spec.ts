/**
 * Abuse at the browser level: another person (another browser context, so another
 * identity cookie) who gets hold of a chat's URL sees "not available", and can neither
 * read its log nor push into it, from the page itself with their own cookie.
 */
import { expect, test, type Page } from '@playwright/test'
import { ChatPage } from './pages/chat'
import { nonce, waitForCalls } from './helpers/upstream'

type Probe = { status: number; body: string }

/** Runs the requests an attacker's page could make with its own cookie. */
async function probe(page: Page, sessionId: string) {
  return page.evaluate(async (id) => {
    const read = async (response: Response): Promise<Probe> => ({ status: response.status, body: await response.text() })
    const base = `/api/sessions/${id}`
    const post = (body: unknown) =>
      fetch(`${base}/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(read)
    // The tail: read the status only (a 200 would be a stream that never ends).
    const tail = await fetch(`${base}/events?after=-1`, { headers: { accept: 'text/event-stream' } })
    const tailProbe: Probe = { status: tail.status, body: tail.ok ? '(stream)' : await tail.text() }
    if (tail.ok) await tail.body?.cancel()
    return {
      tail: tailProbe,
      snapshot: await fetch(`${base}/snapshot`).then(read),
      session: await fetch(base).then(read),
      pushMessage: await post({ type: 'message', payload: { text: 'let me in' } }),
      pushCancel: await post({ type: 'cancelled', payload: { of: 'x', lastSeenIndex: 0 } }),
      pushBatch: await post({ events: [{ type: 'message', payload: { text: 'me too' } }] }),
    }
  }, sessionId)
}

test('another user cannot see, read or push into my chat', async ({ browser }) => {
  // The owner: one short, stopped exchange.
  const ownerContext = await browser.newContext()
  const owner = new ChatPage(await ownerContext.newPage())
  const secret = nonce('secret')
  await owner.goto('/')
  await owner.send(secret)
  await owner.waitForStreaming(20)
  await owner.stopAndReadShown()
  await owner.waitForStatus('stopped')
  await waitForCalls(secret, (c) => c.length === 1 && c[0].closedAt !== undefined)
  const sessionId = owner.sessionId()!
  const ownerView = await owner.answersNow()

  // The other user has used the app (they have their own identity cookie and chat).
  const otherContext = await browser.newContext()
  const other = new ChatPage(await otherContext.newPage())
  await other.goto('/')
  const ownerCookie = (await ownerContext.cookies()).find((c) => c.name === 'a2_uid')
  await expect.poll(async () => (await otherContext.cookies()).find((c) => c.name === 'a2_uid')?.value).toBeTruthy()
  const otherCookie = (await otherContext.cookies()).find((c) => c.name === 'a2_uid')
  expect(otherCookie?.value).not.toBe(ownerCookie?.value)

  // From their own page, with their own cookie: refused, and told nothing (404: not even that it exists).
  const seen = await probe(other.page, sessionId)
  expect(Object.fromEntries(Object.entries(seen).map(([k, v]) => [k, v.status]))).toEqual({
    tail: 404,
    snapshot: 404,
    session: 404,
    pushMessage: 404,
    pushCancel: 404,
    pushBatch: 404,
  })
  for (const { body } of Object.values(seen)) expect(body).not.toContain(secret)

  // Opening the link shows "not available", and nothing of the chat.
  await other.page.goto(`/c/${sessionId}`)
  await expect(other.notFound).toBeVisible()
  await expect(other.userMessages).toHaveCount(0)
  await expect(other.answers).toHaveCount(0)
  await expect(other.page.getByText(secret)).toHaveCount(0)
  await expect(other.sessionItems.filter({ hasText: secret })).toHaveCount(0)
  await other.page.screenshot({ path: 'test-results/abuse-not-found.png' })

  // A browser with no identity at all, opening the link cold, sees the same.
  const coldContext = await browser.newContext()
  const cold = new ChatPage(await coldContext.newPage())
  await cold.page.goto(`/c/${sessionId}`)
  await expect(cold.notFound).toBeVisible()
  await expect(cold.page.getByText(secret)).toHaveCount(0)

  // The owner's chat is untouched: no message was smuggled in, nothing was stopped or added.
  await owner.page.reload()
  await expect(owner.userMessages).toHaveText([secret])
  await expect.poll(() => owner.answersNow()).toEqual(ownerView)

  // Even the owner cannot push what only the server writes.
  const serverOnly = await owner.page.evaluate(async (id) => {
    const response = await fetch(`/api/sessions/${id}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'chunk', payload: { of: 'x', attempt: 1, delta: 'forged' } }),
    })
    return response.status
  }, sessionId)
  expect(serverOnly).toBe(403)
  await owner.page.reload()
  await expect(owner.page.getByText('forged')).toHaveCount(0)

  await Promise.all([ownerContext.close(), otherContext.close(), coldContext.close()])
})
