/**
 * Chaos 3: Postgres restarts mid-stream. An app instance (no embedded worker) and a
 * standalone worker run on a throwaway cluster (scripts/pg-throwaway.ts). With one answer
 * done and a second one streaming, the cluster is stopped (`pg_ctl stop -m fast`: every
 * connection is terminated) and started again. Without restarting themselves, the app and
 * the worker must recover: the interrupted answer resumes or is reported (done, failed or
 * stopped in the UI — never spinning forever), a new message afterwards streams and
 * completes, and every session's log is intact: what was committed before the restart is
 * still there, unchanged, and indexes are gapless from 0.
 */
import { expect, test } from '@playwright/test'
import postgres from 'postgres'
import { createThrowawayPg, throwawayUnavailable, type ThrowawayPg } from '../../scripts/pg-throwaway'
import type { Upstream } from '../../scripts/upstream-server'
import { ChatPage, type AnswerStatus } from '../pages/chat'
import {
  BASE_DATABASE_URL,
  SKIP_REASON,
  allLogs,
  FatalError,
  createRig,
  gapProblem,
  generateJobs,
  normalize,
  transitions,
  upstreamText,
  waitUntil,
  type App,
  type LogRow,
  type Rig,
  type Worker,
} from './harness'

const TOKENS = 100
const TOKEN_MS = 50 // 5 s per answer
const FULL = normalize(upstreamText(TOKENS))
/** The interrupted answer must settle within this (a retry waits for a backoff and streams 5 s again). */
const SETTLES_WITHIN_MS = 60_000

const unavailable = throwawayUnavailable()

test.describe('chaos: Postgres restarted mid-stream', () => {
  test.skip(!BASE_DATABASE_URL, SKIP_REASON)
  test.skip(unavailable !== undefined, `a throwaway Postgres cluster cannot run here: ${unavailable}`)
  test.describe.configure({ timeout: 150_000 })

  let rig: Rig
  let pg: ThrowawayPg
  let upstream: Upstream
  let databaseUrl: string
  let app: App
  let worker: Worker

  test.beforeAll(async () => {
    rig = createRig('pg-restart')
    pg = await createThrowawayPg({ port: 55432 })
    rig.onTeardown(() => pg.destroy())
    upstream = await rig.startUpstream({ tokenMs: TOKEN_MS, tokens: TOKENS })
    const admin = postgres(pg.url, { max: 1, onnotice: () => {} })
    try {
      await admin.unsafe('create database a2_chaos')
    } finally {
      await admin.end()
    }
    databaseUrl = pg.urlFor('a2_chaos')
    app = await rig.startApp('app', { databaseUrl, upstreamUrl: upstream.url })
    worker = await rig.startWorker('worker', { databaseUrl, upstreamUrl: upstream.url })
  })

  // eslint-disable-next-line no-empty-pattern -- Playwright needs the fixtures argument destructured
  test.afterEach(async ({}, testInfo) => {
    if (testInfo.status !== testInfo.expectedStatus) {
      const report = `${rig.report(80)}\n--- postgres.log ---\n${pg?.log().split('\n').slice(-40).join('\n')}`
      console.error(report)
      await testInfo.attach('processes', { body: report })
    }
  })

  test.afterAll(async () => {
    await rig?.teardown()
  })

  test('the app and the worker recover without a restart; the interrupted run settles; every log is intact', async ({ page }) => {
    const chat = new ChatPage(page)
    await chat.goto(`${app.url}/`)

    // Session 1: a finished answer, from before the restart.
    await chat.send('First question, answered before the restart')
    await chat.waitForStatus('done', { timeout: 30_000 })
    expect(normalize(await chat.lastAnswerText())).toBe(FULL)
    const first = chat.sessionId()!

    // Session 2: an answer streaming when the database goes away.
    await chat.newChat()
    await chat.send('Second question, interrupted by the restart')
    await chat.waitForStreaming(40, { timeout: 20_000 })
    const second = chat.sessionId()!
    expect(second).not.toBe(first)
    const interrupted = chat.answers.first()
    const interruptedId = (await interrupted.getAttribute('data-answer-id'))!

    // What was committed before the restart: it must all be there afterwards, unchanged.
    let sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
    const before = await allLogs(sql)
    await sql.end()
    expect([...before.keys()].sort()).toEqual([first, second].sort())
    const requestsBefore = upstream.requests.length
    const streaming = upstream.requests.at(-1)!
    expect(streaming.completedAt, 'the second answer is mid-stream at the restart').toBeUndefined()

    const workerOutputBefore = worker.proc.output().length
    await pg.stop('fast')
    const downAt = Date.now()
    // The outage is the scenario: it lasts until both processes have observed it, rather than
    // for a guessed time that a fast reconnect could straddle unnoticed. The app: a request that
    // reads the database answers an error (503). The worker: a tick of its loop (drain, claim; one
    // at least every 500 ms) fails, and it says so once.
    const refused = await waitUntil(
      'the app to answer a database read with an error while Postgres is down',
      async () => {
        const response = await page.request.get(`${app.url}/api/sessions`, { failOnStatusCode: false, timeout: 10_000 })
        return response.status() >= 500 ? response.status() : undefined
      },
      30_000,
      100,
    )
    const [workerSaw] = await waitUntil(
      'the worker to report a failed tick while Postgres is down',
      () => {
        if (!worker.proc.running) throw new FatalError(`the worker died while Postgres was down:\n${worker.proc.tail(20)}`)
        return (
          worker.proc
            .output()
            .slice(workerOutputBefore)
            // A tick that failed, or (riding the outage out) the one line saying the store is away or the lock lost.
            .match(/\[a2\] worker (?:\w+ failed|\S+: (?:store unreachable|liveness lock lost))[^\n]*/) ?? undefined
        )
      },
      30_000,
      50,
    )
    await pg.start()
    const upAt = Date.now()
    console.log(`[chaos] Postgres was down for ${upAt - downAt} ms; meanwhile the app answered ${refused} and the worker said: ${workerSaw}`)

    // The interrupted answer settles in the UI, live (no reload): resumed, or reported.
    const settled = await waitUntil(
      'the interrupted answer to reach a terminal state in the UI',
      async () => {
        for (const proc of [app.proc, worker.proc]) {
          if (!proc.running) throw new FatalError(`${proc.name} died (exit code ${proc.exitCode}) instead of recovering:\n${proc.tail(20)}`)
        }
        const status = (await interrupted.getAttribute('data-status')) as AnswerStatus | null
        return status === 'done' || status === 'failed' || status === 'stopped' ? status : undefined
      },
      SETTLES_WITHIN_MS,
      200,
    )
    const settledAfterMs = Date.now() - upAt
    const settledText = normalize(await interrupted.getByTestId('answer-text').innerText())
    console.log(
      `[chaos] interrupted answer settled as "${settled}" ${settledAfterMs} ms after Postgres came back; upstream requests since: ${upstream.requests
        .slice(requestsBefore - 1)
        .map((r) => `#${r.id} ${r.tokensSent}/${TOKENS} tokens${r.closedEarly ? ' closed early' : r.completedAt ? ' completed' : ' open'}`)
        .join(', ')}`,
    )
    if (settled === 'done') {
      // Resumed: exactly one attempt's text, no mix of the attempt cut by the restart and its successor.
      expect(settledText).toBe(FULL)
    } else if (settled === 'failed') {
      await expect(interrupted).toContainText('The answer couldn’t be completed.')
      expect(FULL.startsWith(settledText)).toBe(true)
    } else {
      expect(FULL.startsWith(settledText)).toBe(true)
    }

    // Recovered without a restart of their own: same processes, and a new message streams and completes.
    expect(app.proc.running).toBe(true)
    expect(worker.proc.running).toBe(true)
    await chat.send('Third question, after the restart')
    await chat.waitForStreaming(1, { timeout: 30_000 })
    await chat.waitForStatus('done', { timeout: 30_000 })
    expect(normalize(await chat.lastAnswerText())).toBe(FULL)
    expect(app.proc.running).toBe(true)
    expect(worker.proc.running).toBe(true)

    // Every session's log: the pre-restart prefix unchanged, indexes gapless from 0.
    sql = rig.sql(databaseUrl)
    const after = await allLogs(sql)
    for (const [session, rows] of before) {
      const now = after.get(session) ?? []
      expect(now.length).toBeGreaterThanOrEqual(rows.length)
      expect(now.slice(0, rows.length) as LogRow[]).toEqual(rows)
    }
    for (const [session, rows] of after) expect(gapProblem(rows), `session ${session}`).toBeUndefined()
    // Every run ended: nothing left ACTIVE or CANCELLING.
    for (const session of [first, second]) {
      for (const job of await generateJobs(sql, session)) expect(['COMPLETED', 'CANCELLED', 'FAILED']).toContain(job.status)
    }
    const [interruptedJob] = await generateJobs(sql, second)
    console.log(
      `[chaos] interrupted run: ${interruptedJob.status}, attempts ${interruptedJob.attempt}: ${(await transitions(sql, interruptedJob.id)).join(' → ')}`,
    )
    const secondLog = after.get(second)!
    const chunksByAttempt: Record<number, number> = {}
    for (const e of secondLog)
      if (e.type === 'chunk' && e.payload.of === interruptedId) chunksByAttempt[e.payload.attempt] = (chunksByAttempt[e.payload.attempt] ?? 0) + 1
    console.log(`[chaos] interrupted answer's chunks in the log, by attempt: ${JSON.stringify(chunksByAttempt)}`)
    expect(secondLog.filter((e) => e.type === 'finished' || e.type === 'a2.failed').map((e) => e.payload.of)).toEqual(
      expect.arrayContaining([interruptedId]),
    )

    // A reload shows the same: the interrupted answer as it settled, the new one done.
    await page.reload()
    await chat.waitForStatus('done')
    await expect(interrupted).toHaveAttribute('data-status', settled)
    expect(normalize(await interrupted.getByTestId('answer-text').innerText())).toBe(settledText)
    expect(normalize(await chat.lastAnswerText())).toBe(FULL)
  })
})
