/**
 * Figure 14 — the curve: 25, 50, 100, 200 and 500 concurrent streams of 50 tokens/s, ours
 * beside the direct route at each level in the same run: token latency p50/p99 and CPU per
 * token of all processes (figure 2's measurement, `measureStreams`), and a Stop's latency while
 * the level streams beside the same Stop with nothing streaming.
 *
 * A Stop is figure 1's (`stopThroughLog`: a chat of its own, stopped 0–60 ms into its answer),
 * timed from the cancel push's call (what a client's send reaches in-process) to the upstream
 * seeing its request close. Under a level, two Stops at a time loop for as long as the level's
 * streams run through the log; with nothing streaming, the same loop runs alone first.
 */
import type { ChatRig } from '../lib/rig'
import { runPool, firstError } from '../lib/pool'
import { row, type Row } from '../lib/report'
import { fmt, summarize, type Summary } from '../lib/stats'
import { randomBetween } from '../lib/time'
import { chatDirect, chatThroughLog } from './chats'
import { measureStreams } from './tokens'
import { stopThroughLog } from './stop'

export interface CurveLevel {
  streams: number
  ours: Summary
  direct: Summary
  /** µs of CPU per token received, all processes (this one, the worker child, Postgres). */
  cpuPerToken: { ours: number; direct: number }
  /** Stops while the level streamed through the log (push called → upstream closed). */
  stop: Summary
  failed: { ours: number; direct: number; stops: number }
  errors?: string
}

export interface CurveFigure {
  tokensPerStream: number
  /** The same Stop with nothing streaming. */
  idleStop: Summary
  levels: CurveLevel[]
  errors?: string
}

const STOPS_AT_ONCE = 2
const point = () => randomBetween(0, 60)

/** Stops, two at a time, until `running` is false (at least `min`). */
async function stopsWhile(rig: ChatRig, running: () => boolean, min: number) {
  const results: number[] = []
  const errors: unknown[] = []
  const lane = async () => {
    while (running() || results.length + errors.length < min) {
      try {
        results.push((await stopThroughLog(rig, point)).fromCalled)
      } catch (error) {
        errors.push(error)
      }
    }
  }
  await Promise.all(Array.from({ length: STOPS_AT_ONCE }, lane))
  return { results, errors }
}

export async function curveFigure(
  rig: ChatRig,
  options: { levels: number[]; tokens: number; idleStops: number; deadline: number; timeoutMs: number },
): Promise<CurveFigure> {
  // Warm-up: a chat each way and a few Stops, not counted.
  await chatThroughLog(rig, { tokens: 10 })
  await chatDirect(rig, { tokens: 10 })
  await runPool(4, STOPS_AT_ONCE, () => stopThroughLog(rig, point))
  await rig.settled()
  const idle = await runPool(options.idleStops, STOPS_AT_ONCE, () => stopThroughLog(rig, point))
  await rig.settled()
  const levels: CurveLevel[] = []
  for (const streams of options.levels) {
    if (Date.now() > options.deadline) break
    const level = { streams, tokens: options.tokens, rounds: 1 }
    // Unmeasured round each way at the level's concurrency (figure 2's reason: pools open).
    for (const fn of [chatThroughLog, chatDirect]) {
      await runPool(streams, streams, () => fn(rig, { tokens: 5, timeoutMs: options.timeoutMs })).catch(() => undefined)
      await rig.settled().catch(() => undefined)
    }
    // The Stops loop until the level's last chat through the log has ended (before the level
    // waits for every run to settle, which Stops still starting runs would hold off).
    let streaming = true
    let ended = 0
    const counted: typeof chatThroughLog = (r, o) => chatThroughLog(r, o).finally(() => void (++ended === streams && (streaming = false)))
    const measured = measureStreams(rig, counted, level, options.deadline, options.timeoutMs).finally(() => (streaming = false))
    const [ours, stops] = await Promise.all([measured, stopsWhile(rig, () => streaming, 3)])
    await rig.settled().catch(() => undefined)
    const direct = await measureStreams(rig, chatDirect, level, options.deadline, options.timeoutMs)
    levels.push({
      streams,
      ours: summarize(ours.outcomes.flatMap((o) => o.latencies)),
      direct: summarize(direct.outcomes.flatMap((o) => o.latencies)),
      cpuPerToken: { ours: ours.cpuPerToken, direct: direct.cpuPerToken },
      stop: summarize(stops.results),
      failed: { ours: ours.failed, direct: direct.failed, stops: stops.errors.length },
      errors: firstError([...ours.errors, ...direct.errors, ...stops.errors]),
    })
  }
  return { tokensPerStream: options.tokens, idleStop: summarize(idle.results.map((s) => s.fromCalled)), levels, errors: firstError(idle.errors) }
}

/**
 * The figure's rows. Targets are issue 37's: at 100 streams token latency ≤ 2× / 2.5× the direct
 * route's (p50 / p99) and CPU per token ≤ 1.2×; at every level a Stop's p99 ≤ 2× the same Stop
 * with nothing streaming.
 */
export function curveRows(c: CurveFigure): Row[] {
  const out: Row[] = []
  const at = (target: number) => ({ target: { op: '<=' as const, value: target } })
  for (const l of c.levels) {
    const s = `@${l.streams} streams`
    const key = l.streams === 100
    out.push(row(`14 token latency p50 ${s}`, 'ms', l.ours.p50, l.direct.p50, key ? at(2 * l.direct.p50) : {}))
    out.push(row(`14 token latency p99 ${s}`, 'ms', l.ours.p99, l.direct.p99, key ? at(2.5 * l.direct.p99) : {}))
    out.push(row(`14 CPU per token, all processes ${s}`, 'µs', l.cpuPerToken.ours, l.cpuPerToken.direct, key ? at(1.2 * l.cpuPerToken.direct) : {}))
    out.push(row(`14 Stop p99 ${s}`, 'ms', l.stop.p99, c.idleStop.p99, { baselineLabel: '(nothing streaming)', ...at(2 * c.idleStop.p99) }))
  }
  return out
}

export function curveNotes(c: CurveFigure): string[] {
  const notes = [
    `14: ${c.tokensPerStream} tokens a stream at 50 tokens/s; the Stop with nothing streaming p50 ${fmt(c.idleStop.p50)} / p99 ${fmt(c.idleStop.p99)} ms (${c.idleStop.n} Stops)` +
      (c.errors ? `; ${c.errors}` : ''),
  ]
  for (const l of c.levels) {
    const failed =
      l.failed.ours || l.failed.direct || l.failed.stops ? `; failed ours ${l.failed.ours}, direct ${l.failed.direct}, stops ${l.failed.stops}` : ''
    notes.push(
      `   @${l.streams}: ${l.ours.n} tokens ours, ${l.direct.n} direct; ${l.stop.n} Stops (2 at a time while ours streamed) p50 ${fmt(l.stop.p50)} ms${failed}` +
        (l.errors ? `; ${l.errors}` : ''),
    )
  }
  notes.push("   Stop: the cancel push's call → the upstream sees its request close (figure 1's Stop); CPU per token ours includes the Stops' chats.")
  return notes
}
