/**
 * Chaos: Stop pressed while the server is down.
 *
 * One app instance (`next start`) on Postgres, with the answer run by a standalone worker or
 * by the app's embedded one. A browser asks for a long answer; mid-answer the app's whole
 * process group is killed (kill -9), so the page loses its tail and its pushes. The user
 * presses Stop while the app is down and it stays down ~10 s — far longer than a push's
 * ordinary retries (~4 s). Then the app comes back on the same port.
 *
 * The Stop is a durable intent: it stays in the tab's outbox and is delivered when the server
 * is back; the view stays cut at what was on screen the whole time ("Stopping — will apply
 * when reconnected", then "Stopped"), the run ends CANCELLED and its upstream request closes.
 * No upstream request starts after the restart: with a standalone worker the run is never
 * attempted again; with the embedded one the restarted process holds the runs it would resume
 * for 3 s (resumeAfterMs) while the tab re-sends the Stop every second, so the Stop lands before
 * any successor could ask the model again. The same text after a reload.
 */
import { performance } from 'node:perf_hooks'
import { expect, test } from '@playwright/test'
import type { Upstream } from '../../scripts/upstream-server'
import { ChatPage } from '../pages/chat'
import { chaosSuiteHooks, createRig, gapProblem, generateJobs, normalize, sessionLog, upstreamText, waitUntil, type App, type Rig } from './harness'

/** 600 tokens at 100 ms: 60 s, so the answer is still running when the app comes back (~10 s down + its boot). */
const TOKENS = 600
const TOKEN_MS = 100
const FULL = normalize(upstreamText(TOKENS))
/** How long the app stays down after the Stop: more than twice the ~4 s an ordinary push retries before rolling back (250 ms, 1 s, 3 s), so only the durable outbox can deliver it. */
const DOWN_MS = 10_000

/**
 * Where the answer runs: in a standalone worker that outlives the app (it streams on, unseen,
 * while the app is down), or in the app's embedded worker (the answer's own process dies; a
 * successor attempt may start after the restart, continuing from the committed text).
 */
const topologies = [
  { name: 'standalone worker', embeddedWorker: false, reloadWhileDown: false },
  { name: 'embedded worker', embeddedWorker: true, reloadWhileDown: false },
  // The tab is reloaded while the server is still down (an error page): the Stop waits in the
  // browser's outbox (localStorage) and leaves when the page is opened again.
  { name: 'standalone worker, reloaded while down', embeddedWorker: false, reloadWhileDown: true },
] as const

for (const topology of topologies) {
  test.describe(`chaos: Stop while the server is down (${topology.name})`, () => {
    let rig: Rig
    chaosSuiteHooks(150_000, () => rig)
    let upstream: Upstream
    let databaseUrl: string
    let app: App

    test.beforeAll(async () => {
      rig = createRig(`stop-while-down-${topology.embeddedWorker ? 'embedded' : 'standalone'}${topology.reloadWhileDown ? '-reload' : ''}`)
      upstream = await rig.startUpstream({ tokenMs: TOKEN_MS, tokens: TOKENS })
      databaseUrl = await rig.createDatabase()
      app = await rig.startApp('app', { databaseUrl, upstreamUrl: upstream.url, embeddedWorker: topology.embeddedWorker })
      if (!topology.embeddedWorker) await rig.startWorker('worker', { databaseUrl, upstreamUrl: upstream.url })
    })

    test('the Stop is kept and delivered after the restart; the view stays cut at what was on screen; the run ends CANCELLED', async ({ page }) => {
      const sql = rig.sql(databaseUrl)
      const chat = new ChatPage(page)
      let restartedAt = Infinity
      /** Back on the same port (the tab's origin). */
      const restart = async () => {
        restartedAt = performance.now()
        await rig.startApp('app-restarted', {
          databaseUrl,
          upstreamUrl: upstream.url,
          embeddedWorker: topology.embeddedWorker,
          port: Number(new URL(app.url).port),
        })
      }
      await chat.goto(`${app.url}/`)
      await chat.send('Tell me a very long story, please')
      await chat.waitForStreaming(60, { timeout: 30_000 })
      const sessionId = chat.sessionId()!
      const answerId = await chat.lastAnswerId()
      const [request] = upstream.requests
      expect(upstream.requests).toHaveLength(1)

      // The server goes away mid-answer (with its worker, when embedded).
      await app.proc.crash()
      if (topology.embeddedWorker) {
        await request.closed
        expect(request.closedEarly).toBe(true)
        // No attempt is writing: after a few seconds without a chunk the answer says so, quietly.
        await expect(chat.lastAnswer().getByTestId('answer-reconnecting')).toBeVisible({ timeout: 10_000 })
      } else {
        const tokensAtCrash = request.tokensSent
        await waitUntil('the worker to stream on into the log while the app is down', () => request.tokensSent > tokensAtCrash + 5)
      }

      const shown = normalize(await chat.stopAndReadShown())
      const pressedAt = performance.now()
      expect(shown.length).toBeGreaterThan(0)
      expect(FULL.startsWith(shown)).toBe(true)
      // The Stop's first sends fail: the view says so, stays cut, and offers nothing to click that would undo it.
      await expect(chat.lastStoppedMarker()).toHaveAttribute('data-delivered', 'false')
      await expect(chat.lastStoppedMarker()).toHaveText('Stopping — will apply when reconnected')
      await expect(chat.errorAlert).toHaveCount(0)
      await expect(chat.lastAnswer().getByTestId('answer-reconnecting')).toHaveCount(0)

      // Down for DOWN_MS: everything the page shows meanwhile is exactly what was on screen at the press.
      const samples = await chat.watchLastAnswer(DOWN_MS - (performance.now() - pressedAt))
      expect(new Set(samples.map(normalize))).toEqual(new Set([shown]))
      expect(await chat.lastAnswerStatus()).toBe('stopped')
      if (!topology.embeddedWorker) expect(request.closedAt, 'the run was still streaming upstream while the app was down').toBeUndefined()

      if (topology.reloadWhileDown) {
        const chatUrl = page.url()
        await expect(page.reload()).rejects.toThrow(/ERR_CONNECTION_REFUSED/)
        await restart()
        // Chromium's error page reloads by itself once the server answers again; either load will do.
        await chat.goto(chatUrl).catch(async (error: unknown) => {
          if (!/interrupted by another navigation/.test(String(error))) throw error
          await chat.input.waitFor({ state: 'visible' })
        })
      } else {
        await restart()
      }

      // The Stop arrives by itself and the run ends CANCELLED.
      await expect(chat.lastStoppedMarker()).toHaveAttribute('data-delivered', 'true', { timeout: 20_000 })
      await expect(chat.lastStoppedMarker()).toHaveText('Stopped')
      const job = await waitUntil(
        'the run to end CANCELLED',
        async () => {
          const [row] = await generateJobs(sql, sessionId)
          return row?.status === 'CANCELLED' ? row : undefined
        },
        30_000,
      )
      await request.closed
      expect(request.closedEarly).toBe(true)
      expect(request.tokensSent).toBeLessThan(TOKENS)
      const afterRestart = upstream.requests.filter((r) => r.startedAt >= restartedAt)
      // The stopped run never streamed on: no upstream request after the restart. With the
      // embedded worker the restarted process holds the run it would resume for 3 s
      // (resumeAfterMs) while the tab re-sends its Stop every second, so the Stop lands first.
      expect(afterRestart).toEqual([])
      if (!topology.embeddedWorker) expect(job.attempt).toBe(1) // and no second attempt

      // The log: one Stop (its retries were one event), naming this answer, at what the page had seen.
      // Read once the answer's terminal event is in: the `onEnded` hook writes it after the run's end commits.
      await expect.poll(async () => (await sessionLog(sql, sessionId)).some((e) => e.type === 'finished'), { timeout: 10_000 }).toBe(true)
      const log = await sessionLog(sql, sessionId)
      expect(gapProblem(log)).toBeUndefined()
      const stops = log.filter((e) => e.type === 'cancelled')
      expect(stops).toHaveLength(1)
      expect(stops[0].payload.of).toBe(answerId)
      const seen = log.filter((e) => e.type === 'chunk' && e.index <= stops[0].payload.lastSeenIndex)
      expect(normalize(seen.map((e) => e.payload.delta).join(''))).toBe(shown)
      if (!topology.embeddedWorker) {
        expect(
          log.filter((e) => e.type === 'chunk' && e.index > stops[0].payload.lastSeenIndex).length,
          'chunks the worker wrote while the app was down',
        ).toBeGreaterThan(0)
      }
      // Every answer's log ends with its one terminal event. The standalone worker's attempt writes
      // it itself; with the embedded worker no attempt is left to (the Stop landed before any
      // successor started, and the drain settled the run): the consumer's ending hook writes it.
      const finished = log.filter((e) => e.type === 'finished').map((e) => e.payload)
      expect(finished).toEqual([expect.objectContaining({ of: answerId, reason: 'cancelled' })])

      // The tab recovered by itself: cut where it was, no alert, no reconnecting pill.
      expect(normalize(await chat.lastAnswerText())).toBe(shown)
      await expect(chat.connectionStatus).toHaveCount(0)
      await expect(chat.errorAlert).toHaveCount(0)

      // And after a reload.
      await page.reload()
      await chat.waitForStatus('stopped')
      expect(normalize(await chat.lastAnswerText())).toBe(shown)
      await expect(chat.lastStoppedMarker()).toHaveText('Stopped')
    })
  })
}
