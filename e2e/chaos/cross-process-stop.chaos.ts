/**
 * Chaos 2: Stop crosses processes. The browser is on app instance A; the run is on a
 * standalone worker process (no app instance runs a worker); a second tab watches the same
 * answer through instance B. Pressing Stop on A appends `cancelled` through A; the worker
 * learns it over Postgres (NOTIFY, or its next renewal) and aborts the model call: the
 * upstream request closes early within a bounded time (the speed figure is the benchmark's,
 * not this test's). Both tabs, and a reload, show the same cut.
 */
import { performance } from 'node:perf_hooks'
import { expect, test } from '@playwright/test'
import type { Upstream } from '../../scripts/upstream-server'
import { ChatPage } from '../pages/chat'
import {
  chaosSuiteHooks,
  createRig,
  gapProblem,
  generateJobs,
  normalize,
  sessionLog,
  transitions,
  waitUntil,
  within,
  type App,
  type Rig,
  type Worker,
} from './harness'

const TOKENS = 400
const TOKEN_MS = 50 // 20 s if nobody stops it
/** Bounded, not timed: well past a lost NOTIFY plus one lease renewal (5 s) would be a bug, not slowness. */
const UPSTREAM_CLOSES_WITHIN_MS = 5_000

test.describe('chaos: Stop on instance A, the run on a worker process', () => {
  let rig: Rig
  chaosSuiteHooks(120_000, () => rig)
  let upstream: Upstream
  let databaseUrl: string
  let appA: App
  let appB: App
  let worker: Worker

  test.beforeAll(async () => {
    rig = createRig('cross-stop')
    upstream = await rig.startUpstream({ tokenMs: TOKEN_MS, tokens: TOKENS })
    databaseUrl = await rig.createDatabase()
    appA = await rig.startApp('appA', { databaseUrl, upstreamUrl: upstream.url })
    ;[appB, worker] = await Promise.all([
      rig.startApp('appB', { databaseUrl, upstreamUrl: upstream.url }),
      rig.startWorker('worker', { databaseUrl, upstreamUrl: upstream.url }),
    ])
  })

  test('the upstream request closes early, and A, B and a reload show the same cut', async ({ page, context }) => {
    const sql = rig.sql(databaseUrl)
    const chat = new ChatPage(page)
    await chat.goto(`${appA.url}/`)
    await chat.send('Tell me about cancellation across processes')
    await chat.waitForStreaming(60, { timeout: 20_000 })
    const sessionId = chat.sessionId()!

    // A second tab on instance B follows the same answer.
    const pageB = await context.newPage()
    const chatB = new ChatPage(pageB)
    await chatB.goto(`${appB.url}/c/${sessionId}`)
    await chatB.waitForStreaming(1, { timeout: 20_000 })

    // The run is on the worker process, not on either app instance.
    const [job] = await waitUntil('the generate job to be claimed', async () => {
      const jobs = await generateJobs(sql, sessionId)
      return jobs.length === 1 && jobs[0].owner ? jobs : undefined
    })
    expect(job.owner).toBe(worker.id)
    expect(upstream.requests).toHaveLength(1)
    const request = upstream.requests[0]
    expect(request.closedAt, 'still streaming before Stop').toBeUndefined()
    // Let a few more tokens land so the cut is not at the very start.
    const grows = (await chat.lastAnswerText()).length
    await expect.poll(async () => (await chat.lastAnswerText()).length).toBeGreaterThan(grows)

    const pressedAt = performance.now()
    const shown = await chat.stopAndReadShown() // read and Stop in one task: no token lands between
    await within(request.closed, UPSTREAM_CLOSES_WITHIN_MS + 1_000, 'the upstream request closing after Stop')
    expect(request.closedEarly).toBe(true)
    const closedAfterMs = request.closedAt! - pressedAt
    expect(closedAfterMs).toBeLessThan(UPSTREAM_CLOSES_WITHIN_MS)
    expect(request.tokensSent).toBeLessThan(TOKENS)
    console.log(
      `[chaos] upstream closed ${closedAfterMs.toFixed(0)} ms after Stop on A (run on ${worker.id}); ${request.tokensSent}/${TOKENS} tokens sent`,
    )

    // A: cut exactly at what it showed; stragglers in flight vanish.
    await chat.waitForStatus('stopped')
    await expect(chat.lastAnswer().getByTestId('stopped-marker')).toBeVisible()
    // The run's `finished` (reason cancelled) is its last event, after every chunk it wrote: once
    // the page has folded it (data-ended), every straggler has reached the page too.
    await expect(chat.lastAnswer()).toHaveAttribute('data-ended', 'cancelled', { timeout: 15_000 })
    expect(normalize(await chat.lastAnswerText())).toBe(normalize(shown))
    expect(normalize(shown).length).toBeGreaterThan(0)

    // The run ended CANCELLED on its first attempt, never retried.
    const cancelled = await waitUntil('the run to end CANCELLED', async () => {
      const [row] = await generateJobs(sql, sessionId)
      return row.status === 'CANCELLED' ? row : undefined
    })
    expect(cancelled.attempt).toBe(1)
    const history = await transitions(sql, cancelled.id)
    expect(history).toContain('1:ACTIVE>CANCELLING:CANCEL_APPENDED')
    expect(history.at(-1)).toBe('1:CANCELLING>CANCELLED:STOPPED_BY_CANCEL')

    // The log: gapless, one terminal event, no chunk admitted after the cancel was durable.
    const log = await sessionLog(sql, sessionId)
    expect(gapProblem(log)).toBeUndefined()
    const cancel = log.find((e) => e.type === 'cancelled')!
    expect(log.filter((e) => e.type === 'chunk' && e.index > cancel.index)).toEqual([])
    const finished = log.filter((e) => e.type === 'finished')
    expect(finished).toHaveLength(1)
    expect(finished[0].payload).toMatchObject({ reason: 'cancelled', attempt: 1 })

    // B shows the same cut, live and after a reload; so does A after a reload.
    await chatB.waitForStatus('stopped')
    expect(normalize(await chatB.lastAnswerText())).toBe(normalize(shown))
    await pageB.reload()
    await chatB.waitForStatus('stopped')
    expect(normalize(await chatB.lastAnswerText())).toBe(normalize(shown))
    await page.reload()
    await chat.waitForStatus('stopped')
    expect(normalize(await chat.lastAnswerText())).toBe(normalize(shown))
    await pageB.close()

    // Nobody asked the upstream again, and nobody can: the session's one generate job is
    // CANCELLED (terminal: never claimed again) on its first attempt.
    const jobs = await generateJobs(sql, sessionId)
    expect(jobs.map((j) => [j.status, j.attempt])).toEqual([['CANCELLED', 1]])
    expect(upstream.requests).toHaveLength(1)
  })
})
