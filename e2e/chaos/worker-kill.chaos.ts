/**
 * Chaos 1: kill -9 of the worker running an answer, mid-stream.
 *
 * Two app instances (A, B; no embedded worker) and two standalone workers share one Postgres.
 * A browser on A asks a question; the test finds which worker holds the run (a2_jobs.owner is
 * the worker's id, `<host>:<pid>:<rand>`) and kills its whole process group with SIGKILL. The
 * killed process's liveness lock (an advisory lock on a connection of its own) goes with its
 * socket; the other worker sees that on its next drain tick (≤ 500 ms), records OWNER_DIED and
 * claims the job — long before the generate consumer's 15 s lease would run out — and continues
 * the answer from the text attempt 1 committed (sent as the answer so far; the upstream, like
 * servers that continue a final assistant message, streams only the rest). So "text the reader
 * saw never disappears" is checkable: every text the page ever showed is a prefix of the one
 * answer, the page never went back, and the final text is exactly that answer — the same after
 * a reload on A and on instance B.
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
  recordAnswerTexts,
  sessionLog,
  transitions,
  upstreamText,
  waitUntil,
  within,
  type App,
  type Rig,
  type Worker,
} from './harness'

const TOKENS = 80
const TOKEN_MS = 60 // ~4.8 s per attempt: long enough to kill mid-stream, short enough for the suite's budget
const FULL = normalize(upstreamText(TOKENS))
/** The generate consumer's lease (lib/chat/answer/generate.ts): the takeover must not have waited for it. */
const LEASE_MS = 15_000
/** A worker judges others dead only once its own liveness lock has held this long (lib/a2/internal/runtime/liveness.ts). */
const LIVENESS_SETTLE_MS = 3_000

test.describe('chaos: kill -9 of the worker mid-stream', () => {
  let rig: Rig
  chaosSuiteHooks(150_000, () => rig)
  let upstream: Upstream
  let databaseUrl: string
  let appA: App
  let appB: App
  let workers: Worker[]
  let workersUpAt: number

  test.beforeAll(async () => {
    rig = createRig('worker-kill')
    upstream = await rig.startUpstream({ tokenMs: TOKEN_MS, tokens: TOKENS })
    databaseUrl = await rig.createDatabase()
    // A first: it runs the migrations (under an advisory lock anyway), the rest start together.
    appA = await rig.startApp('appA', { databaseUrl, upstreamUrl: upstream.url })
    const started = await Promise.all([
      rig.startApp('appB', { databaseUrl, upstreamUrl: upstream.url }),
      rig.startWorker('worker1', { databaseUrl, upstreamUrl: upstream.url }),
      rig.startWorker('worker2', { databaseUrl, upstreamUrl: upstream.url }),
    ])
    appB = started[0]
    workers = [started[1], started[2]]
    workersUpAt = performance.now()
  })

  // Two models: one that continues the answer so far it is sent, and one that ignores the
  // instruction and starts over, as chat-completions servers without prefill do (the upstream
  // restarts for a prompt with `[[restarts]]`); the reader must see the same one answer.
  for (const model of [
    { name: 'continues', prompt: 'Tell me a long story, please' },
    { name: 'starts over', prompt: 'Tell me a long story, please [[restarts]]' },
  ])
    test(`the other worker takes the run over within seconds of the kill, not a lease; the successor continues the answer (a model that ${model.name}); nothing the reader saw is lost`, async ({
      page,
      context,
    }) => {
      const sql = rig.sql(databaseUrl)
      // The previous case killed one worker: a replacement takes its place.
      workers = await Promise.all(
        workers.map(async (w, i) => {
          if (w.proc.running) return w
          const fresh = await rig.startWorker(`worker${i + 1}-again`, { databaseUrl, upstreamUrl: upstream.url })
          workersUpAt = performance.now()
          return fresh
        }),
      )
      const requestsBefore = upstream.requests.length
      // The survivor must already trust its own liveness lock when the other one dies.
      await waitUntil(
        'the workers to hold their liveness locks past the settle time',
        () => performance.now() - workersUpAt > LIVENESS_SETTLE_MS + 200,
      )
      await page.addInitScript(recordAnswerTexts)
      const chat = new ChatPage(page)
      await chat.goto(`${appA.url}/`)
      await chat.send(model.prompt)
      await chat.waitForStreaming(40, { timeout: 20_000 })
      const sessionId = chat.sessionId()!
      const answerId = (await chat.lastAnswer().getAttribute('data-answer-id'))!

      // Which worker runs it: the job's owner is that worker's id.
      const [job] = await waitUntil('the generate job to be claimed', async () => {
        const jobs = await generateJobs(sql, sessionId)
        return jobs.length === 1 && jobs[0].owner && jobs[0].attempt === 1 ? jobs : undefined
      })
      const victim = workers.find((w) => w.id === job.owner)
      expect(victim, `owner ${job.owner} is one of our workers (${workers.map((w) => w.id).join(', ')})`).toBeDefined()
      const survivor = workers.find((w) => w !== victim)!
      expect(upstream.requests).toHaveLength(requestsBefore + 1)
      const first = upstream.requests[requestsBefore]
      expect(first.completedAt, 'the first attempt is still streaming when it is killed').toBeUndefined()

      const killedAt = performance.now()
      const killedAtEpoch = Date.now()
      await victim!.proc.crash()
      // The dead process's socket closes: the upstream sees the first request end early.
      // 5 s: the kernel closes a dead process's sockets as it reaps it (crash() has waited for that).
      await within(first.closed, 5_000, "the upstream seeing the killed worker's request close")
      expect(first.closedEarly).toBe(true)
      expect(first.tokensSent).toBeLessThan(TOKENS)
      const shownAtKill = normalize(await chat.lastAnswerText())
      expect(FULL.startsWith(shownAtKill)).toBe(true)

      // The survivor sees the owner die and claims attempt 2, well inside the dead owner's lease.
      const second = await upstream.waitForRequest((r) => r.id === first.id + 1, LEASE_MS)
      const [firstChunkOfNext] = await waitUntil('the first chunk of attempt 2 in the log', async () => {
        const rows = await sql<{ at: number }[]>`select extract(epoch from created_at) * 1000 as at from a2_events
        where session_id = ${sessionId} and type = 'chunk' and (payload ->> 'attempt')::int = 2 order by index limit 1`
        return rows.length > 0 ? rows : undefined
      })
      const takeoverMs = Number(firstChunkOfNext.at) - killedAtEpoch
      console.log(
        `[chaos] killed ${victim!.id} after ${first.tokensSent}/${TOKENS} tokens; ${survivor.id} asked the upstream again ${(second.startedAt - killedAt).toFixed(0)} ms later; first chunk of attempt 2 ${takeoverMs.toFixed(0)} ms after the kill`,
      )
      // Not the lease: the death was seen from Postgres (bench figure "takeover after kill -9" measures it over 20 kills).
      expect(takeoverMs).toBeLessThan(LEASE_MS)
      const [retried] = await generateJobs(sql, sessionId)
      expect(retried.attempt).toBe(2)
      expect(retried.owner).toBe(survivor.id)

      await chat.waitForStatus('done', { timeout: 30_000 })
      await second.closed
      expect(second.closedEarly).toBe(false)
      expect(upstream.requests).toHaveLength(requestsBefore + 2)
      if (model.name === 'starts over') expect(second.tokensSent, 'the upstream really started over').toBe(TOKENS)

      // One answer: no "tok0 … tok20 tok0 tok1 …" (a restart) and no gap.
      const finalText = normalize(await chat.lastAnswerText())
      expect(finalText).toBe(FULL)
      expect(finalText.split('tok0 ').length - 1).toBe(1)
      // And at no moment did the page show anything else, or take back text it had shown.
      const seen = await page.evaluate(() => (window as unknown as { __chaosSeen: Record<string, string[]> }).__chaosSeen)
      const shown = seen[answerId] ?? []
      expect(shown.length).toBeGreaterThan(2)
      const resets = shown.filter((text, i) => i > 0 && !text.startsWith(shown[i - 1])).length
      console.log(`[chaos] the page showed ${shown.length} distinct texts; it went back ${resets} time(s)`)
      expect(resets, 'text the reader saw never disappears').toBe(0)
      for (const text of shown)
        expect(FULL.startsWith(text), `the page showed a text that is not a prefix of the answer: "${text.slice(0, 200)}…"`).toBe(true)

      // The durable record: gapless log, the run completed by attempt 2, chunks of both attempts kept as history.
      const log = await sessionLog(sql, sessionId)
      expect(gapProblem(log)).toBeUndefined()
      const chunksOf = (attempt: number) => log.filter((e) => e.type === 'chunk' && e.payload.attempt === attempt)
      expect(chunksOf(1).length).toBeGreaterThan(0)
      // Attempt 2 continued after attempt 1's last committed chunk: together they are the answer, once.
      expect(chunksOf(2)[0].index).toBeGreaterThan(chunksOf(1).at(-1)!.index)
      expect([...chunksOf(1), ...chunksOf(2)].map((e) => e.payload.delta).join('')).toBe(upstreamText(TOKENS))
      expect(second.body.messages.at(-1)).toMatchObject({
        role: 'assistant',
        content: chunksOf(1)
          .map((e) => e.payload.delta)
          .join(''),
      })
      const finished = log.filter((e) => e.type === 'finished')
      expect(finished).toHaveLength(1)
      expect(finished[0].payload).toMatchObject({ of: answerId, attempt: 2, reason: 'stop' })
      expect(log.filter((e) => e.type === 'a2.failed')).toEqual([])
      const [done] = await generateJobs(sql, sessionId)
      expect(done.status).toBe('COMPLETED')
      const history = await transitions(sql, done.id)
      console.log(`[chaos] the run: ${history.join(' → ')}`)
      // The owner died (seen from its liveness lock); attempt 2 found the model call attempt 1 left
      // DISPATCHED, asked the consumer's reconcile hook ("not done": safe to ask again), and finished.
      expect(history).toEqual(['1:ACTIVE>ACTIVE:OWNER_DIED', '2:ACTIVE>ACTIVE:EFFECT_RECONCILED_NOT_DONE', '2:ACTIVE>COMPLETED:RETURNED'])

      // Nothing lost: a reload on A and a fresh page on B show the same text.
      await page.reload()
      await chat.waitForStatus('done')
      expect(normalize(await chat.lastAnswerText())).toBe(FULL)
      const pageB = await context.newPage()
      const chatB = new ChatPage(pageB)
      await chatB.goto(`${appB.url}/c/${sessionId}`)
      await chatB.waitForStatus('done')
      expect(normalize(await chatB.lastAnswerText())).toBe(FULL)
      await pageB.close()
    })
})
