/**
 * Figure 1 — Stop latency: from the cancel push being accepted (server.push resolved) to
 * the upstream model server seeing its request close, with the run on another process.
 *
 * Each stop (../lib/stop-midway.ts): a new session, push message + generate, wait until the
 * upstream streams, wait a random 0–60 ms more (a random point in the answer), push
 * `cancelled`, then wait for the upstream's `closedAt`. A few stops run at once to keep the
 * figure short.
 *
 * Baseline: the same upstream called directly with streamText + AbortController in this
 * process, aborted at the same kind of point (abort() → closedAt).
 */
import { streamText } from 'ai'
import { performance } from 'node:perf_hooks'
import { sql } from 'drizzle-orm'
import type { ChatRig, CpuSample } from '../lib/rig'
import { prompt } from '../lib/upstream'
import { runPool, firstError } from '../lib/pool'
import { summarize, type Summary } from '../lib/stats'
import { randomBetween, sleep, until, within } from '../lib/time'
import { stopMidway, type StopSample } from '../lib/stop-midway'
import { rows } from '../lib/db'

let seq = 0

/** One Stop through the log, timed to the upstream seeing the model's request close. */
export function stopThroughLog(rig: ChatRig, pointMs: () => number): Promise<StopSample> {
  const tag = `stop${process.pid}x${++seq}`
  return stopMidway(rig, {
    text: prompt(tag, 5_000),
    inFlight: async () => {
      const request = await rig.byTag.wait(tag, 20_000)
      await until(() => request.tokensSent >= 1, 20_000, 'first upstream token', 2)
      return request
    },
    pointMs,
    what: 'upstream request',
  })
}

/** One Stop of a plain streamText call: abort() → upstream closed. */
export async function stopDirect(rig: ChatRig, pointMs: () => number): Promise<StopSample> {
  const tag = `direct${process.pid}x${++seq}`
  const controller = new AbortController()
  const result = streamText({
    model: rig.model,
    messages: [{ role: 'user', content: prompt(tag, 5_000) }],
    abortSignal: controller.signal,
    maxRetries: 0,
  })
  const consuming = (async () => {
    try {
      for await (const _ of result.stream) void _
    } catch {
      // aborted
    }
  })()
  const request = await rig.byTag.wait(tag, 20_000)
  await until(() => request.tokensSent >= 1, 20_000, 'first upstream token', 2)
  await sleep(pointMs())
  const called = performance.now()
  controller.abort()
  await within(request.closed, 15_000, 'upstream request to close after abort')
  await consuming
  return { fromAccepted: request.closedAt! - called, fromCalled: request.closedAt! - called, pushMs: 0, closedEarly: request.closedEarly }
}

export interface StopFigure {
  ours: Summary
  oursFromCalled: Summary
  cancelPush: Summary
  baseline: Summary
  notClosedEarly: number
  runsCancelled: { cancelled: number; total: number }
  errors?: string
  concurrency: number
  cpu: CpuSample
}

export async function stopFigure(rig: ChatRig, options: { stops: number; concurrency: number; deadline: number }): Promise<StopFigure> {
  const point = () => randomBetween(0, 60)
  // Warm-up (JIT, connection pools, the upstream's keep-alive): not counted.
  await runPool(4, 4, () => stopThroughLog(rig, point))
  await runPool(4, 4, () => stopDirect(rig, point))
  await rig.settled()
  const before = await countGenerateRuns(rig)

  await rig.cpu()
  const ours = await runPool(options.stops, options.concurrency, () => stopThroughLog(rig, point), { deadline: options.deadline })
  const cpu = await rig.cpu()
  await rig.settled()
  const after = await countGenerateRuns(rig)
  const base = await runPool(options.stops, options.concurrency, () => stopDirect(rig, point), { deadline: options.deadline + 30_000 })

  return {
    ours: summarize(ours.results.map((s) => s.fromAccepted)),
    oursFromCalled: summarize(ours.results.map((s) => s.fromCalled)),
    cancelPush: summarize(ours.results.map((s) => s.pushMs)),
    baseline: summarize(base.results.map((s) => s.fromAccepted)),
    notClosedEarly: ours.results.filter((s) => !s.closedEarly).length,
    runsCancelled: { cancelled: after.cancelled - before.cancelled, total: after.total - before.total },
    errors: firstError([...ours.errors, ...base.errors]),
    concurrency: options.concurrency,
    cpu,
  }
}

/** Generate runs in the bench database: how many, and how many ended CANCELLED. */
export async function countGenerateRuns(rig: ChatRig): Promise<{ cancelled: number; total: number }> {
  const [row] = await rows<{ cancelled: number; total: number }>(
    rig.store,
    sql`select count(*) filter (where status = 'CANCELLED')::int as cancelled, count(*)::int as total from a2_jobs where consumer = 'generate'`,
  )
  return { cancelled: Number(row.cancelled), total: Number(row.total) }
}
