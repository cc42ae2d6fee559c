/**
 * Figure 6 — Scale: stop latency and token latency at 10, 100 and 500 concurrent chats,
 * each stopped at a random point (after the client saw 3–40 tokens). Rounds repeat at
 * the small levels so every percentile stands on ≥100 stops. Baseline: the same chats
 * through the direct streamText route, stopped by the client closing its connection.
 */
import type { ChatRig, CpuSample } from '../lib/rig'
import { runPool, firstError } from '../lib/pool'
import { summarize, type Summary } from '../lib/stats'
import { randomBetween, randomInt, sleep } from '../lib/time'
import { chatDirect, chatThroughLog, summarizeLogPath, type ChatOutcome, type LogPath } from './chats'

export interface ScaleLevel extends LogPath {
  chats: number
  rounds: number
  /** Chats that did not reach their stop point (or finish) within the timeout, per side. */
  failed: { ours: number; baseline: number }
  stop: { ours: Summary; baseline: Summary }
  token: { ours: Summary; baseline: Summary }
  notClosedEarly: number
  cpu: { ours: CpuSample; baseline: CpuSample }
  errors?: string
}

export async function scaleFigure(
  rig: ChatRig,
  levels: Array<{ chats: number; rounds: number }>,
  deadline: number,
  timeoutMs = 15_000,
): Promise<ScaleLevel[]> {
  const out: ScaleLevel[] = []
  for (const level of levels) {
    if (Date.now() > deadline) break
    const run = async (fn: (rig: ChatRig, o: { tokens: number; stopAfter: number; timeoutMs: number }) => Promise<ChatOutcome>) => {
      const outcomes: ChatOutcome[] = []
      const errors: unknown[] = []
      let rounds = 0
      await rig.cpu()
      // At least one round per side once a level has started, so ours always has its baseline.
      for (; rounds < level.rounds && (rounds === 0 || Date.now() < deadline); rounds++) {
        const r = await runPool(level.chats, level.chats, async () => {
          await sleep(randomBetween(0, 1000))
          return fn(rig, { tokens: 400, stopAfter: randomInt(3, 40), timeoutMs })
        })
        outcomes.push(...r.results)
        errors.push(...r.errors)
        await rig.settled(20_000).catch((error) => errors.push(error))
      }
      return { outcomes, errors, rounds, failed: errors.length, cpu: await rig.cpu() }
    }
    const ours = await run(chatThroughLog)
    const base = await run(chatDirect)
    out.push({
      chats: level.chats,
      rounds: ours.rounds,
      failed: { ours: ours.failed, baseline: base.failed },
      stop: { ours: summarize(ours.outcomes.map((o) => o.stopMs!)), baseline: summarize(base.outcomes.map((o) => o.stopMs!)) },
      token: { ours: summarize(ours.outcomes.flatMap((o) => o.latencies)), baseline: summarize(base.outcomes.flatMap((o) => o.latencies)) },
      notClosedEarly: ours.outcomes.filter((o) => !o.closedEarly).length,
      cpu: { ours: ours.cpu, baseline: base.cpu },
      ...summarizeLogPath(ours.outcomes),
      errors: firstError([...ours.errors, ...base.errors]),
    })
  }
  return out
}
