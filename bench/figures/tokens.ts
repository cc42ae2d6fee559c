/**
 * Figure 2 — Token overhead: upstream token written → the same token received by an SSE
 * client through the log (the worker on another process appends it; the tail reads it and
 * `sseResponse` serves it over real HTTP), at 1 and at 100 concurrent streams, 50 tokens/s
 * each. Baseline: a route that pipes streamText straight to the client as SSE.
 */
import { performance } from 'node:perf_hooks'
import type { ChatRig, CpuSample } from '../lib/rig'
import { pidsCpu } from '../lib/machine'
import { runPool, firstError } from '../lib/pool'
import { summarize, type Summary } from '../lib/stats'
import { randomBetween, sleep } from '../lib/time'
import { chatDirect, chatThroughLog, summarizeLogPath, type ChatOutcome, type LogPath } from './chats'

export interface TokenLevel extends LogPath {
  streams: number
  tokensPerStream: number
  /** Chats that did not complete within the timeout, per side. */
  failed: { ours: number; baseline: number }
  ours: Summary
  baseline: Summary
  lost: { ours: number; baseline: number }
  cpu: { ours: CpuSample; baseline: CpuSample }
  /**
   * CPU time per token received, all processes together (this one — the upstream stand-in,
   * the HTTP server and its SSE clients —, the worker child, the bench database's Postgres
   * backends and the server's background processes), in µs.
   */
  cpuPerToken: { ours: number; baseline: number }
  errors?: string
}

export async function tokenFigure(
  rig: ChatRig,
  levels: Array<{ streams: number; tokens: number; rounds: number }>,
  deadline: number,
  timeoutMs = 30_000,
): Promise<TokenLevel[]> {
  // Warm-up: one short chat each way.
  await chatThroughLog(rig, { tokens: 10 })
  await chatDirect(rig, { tokens: 10 })
  const out: TokenLevel[] = []
  for (const level of levels) {
    if (Date.now() > deadline) break
    // Warm-up at the level's concurrency, unmeasured, each way: the first round at 100 streams
    // opened most of both processes' pool connections (10 each): 14 Postgres backends started in
    // it, 50-70 ms of CPU each in their first 2 s (start-up, catalog caches, each prepared
    // statement's plan, the append function's compile), a one-off per connection a running app
    // has paid. 3 alternated pairs: Postgres 19% -> 14-15% of a core, CPU per token 1.44x -> 1.06x.
    if (level.streams > 1) {
      for (const fn of [chatThroughLog, chatDirect]) {
        await runPool(level.streams, level.streams, () => fn(rig, { tokens: 5, timeoutMs })).catch(() => undefined)
        await rig.settled().catch(() => undefined)
      }
    }
    const ours = await measureStreams(rig, chatThroughLog, level, deadline, timeoutMs)
    const base = await measureStreams(rig, chatDirect, level, deadline, timeoutMs)
    out.push({
      streams: level.streams,
      tokensPerStream: level.tokens,
      failed: { ours: ours.failed, baseline: base.failed },
      ours: summarize(ours.outcomes.flatMap((o) => o.latencies)),
      baseline: summarize(base.outcomes.flatMap((o) => o.latencies)),
      lost: { ours: sum(ours.outcomes.map((o) => o.lost)), baseline: sum(base.outcomes.map((o) => o.lost)) },
      cpu: { ours: ours.cpu, baseline: base.cpu },
      cpuPerToken: { ours: ours.cpuPerToken, baseline: base.cpuPerToken },
      ...summarizeLogPath(ours.outcomes),
      errors: firstError([...ours.errors, ...base.errors]),
    })
  }
  return out
}

export interface StreamsMeasured {
  outcomes: ChatOutcome[]
  errors: unknown[]
  failed: number
  cpu: CpuSample
  /** CPU time per token received, all processes together (as TokenLevel.cpuPerToken), µs. */
  cpuPerToken: number
  /** How long the rounds took, first chat started → last run settled (ms). */
  wallMs: number
}

/**
 * `level.rounds` rounds of `level.streams` chats at once, `level.tokens` parts each, with the CPU
 * of every process over them: figure 2's measurement, and figure 12's (reasoning parts).
 * `others`: the pids of processes outside the rig that serve these chats (figure 16's anchor
 * server and its redis-server), counted with the rig's; `settled`: what ends a round besides the
 * rig's runs (the anchor's producers).
 */
export async function measureStreams(
  rig: ChatRig,
  fn: (rig: ChatRig, o: { tokens: number; timeoutMs: number }) => Promise<ChatOutcome>,
  level: { streams: number; tokens: number; rounds: number },
  deadline: number,
  timeoutMs: number,
  outside: { others?: () => Promise<number[]>; settled?: () => Promise<void> } = {},
): Promise<StreamsMeasured> {
  const outcomes: ChatOutcome[] = []
  const errors: unknown[] = []
  await rig.cpu()
  const othersMeter = outside.others && (await pidsCpu(outside.others))
  const started = performance.now()
  // Once a level has started, both sides run at least one round: ours always has its baseline.
  for (let round = 0; round < level.rounds && (round === 0 || Date.now() < deadline); round++) {
    // Random phase: streams start spread over 500 ms, as independent users would.
    const r = await runPool(level.streams, level.streams, async () => {
      if (level.streams > 1) await sleep(randomBetween(0, 500))
      return fn(rig, { tokens: level.tokens, timeoutMs })
    })
    outcomes.push(...r.results)
    errors.push(...r.errors)
    await rig.settled().catch((error) => errors.push(error))
    await outside.settled?.().catch((error) => errors.push(error))
  }
  const cpu = await rig.cpu()
  if (othersMeter) cpu.othersPct = await othersMeter.stop()
  const wallMs = performance.now() - started
  const tokens = sum(outcomes.map((o) => o.latencies.length))
  // pct is % of one core over the phase: pct/100 × wall ms × 1000 = µs of CPU.
  const busyPct = cpu.parentPct + (cpu.workerPct ?? 0) + (cpu.postgresPct ?? 0) + (cpu.othersPct ?? 0)
  return { outcomes, errors, failed: errors.length, cpu, cpuPerToken: tokens ? ((busyPct / 100) * wallMs * 1_000) / tokens : NaN, wallMs }
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
