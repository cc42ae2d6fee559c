/**
 * Figure 12 — CPU per streamed part, a reasoning answer against a text answer: the same number
 * of parts streamed by the upstream as `reasoning_content` deltas (the answer is all reasoning)
 * or as `content` deltas (all text), through the app and the worker (the rig: the worker child
 * appends them, the tail serves them over HTTP to an SSE client here), in µs of CPU of every
 * process per part the client received, measured as figure 2 measures CPU per token
 * (measureStreams). Baseline: the text answer.
 *
 * The two kinds alternate, pair after pair (text, reasoning, text, reasoning …), so a change of
 * the machine's load lands on both; the figure is the median of the pairs' ratios, beside the
 * CPU per part of all pairs together.
 */
import type { ChatRig, CpuSample } from '../lib/rig'
import { firstError } from '../lib/pool'
import { summarize, type Summary } from '../lib/stats'
import { chatThroughLog } from './chats'
import { measureStreams, type StreamsMeasured } from './tokens'

export interface ReasoningCpuFigure {
  streams: number
  partsPerStream: number
  pairs: Array<{ text: number; reasoning: number }>
  /** CPU µs per part received over all pairs together. */
  cpuPerPart: { reasoning: number; text: number }
  /** Median of reasoning / text over the pairs. */
  ratio: number
  /** Token (part) latency, upstream write → client, over all pairs. */
  latency: { reasoning: Summary; text: Summary }
  lost: { reasoning: number; text: number }
  cpu: { reasoning: CpuSample; text: CpuSample }
  errors?: string
}

export async function reasoningCpuFigure(
  rig: ChatRig,
  options: { streams: number; parts: number; pairs: number; deadline: number; timeoutMs: number },
): Promise<ReasoningCpuFigure> {
  const level = { streams: options.streams, tokens: options.parts, rounds: 1 }
  const text = (r: ChatRig, o: { tokens: number; timeoutMs: number }) => chatThroughLog(r, o)
  const reasoning = (r: ChatRig, o: { tokens: number; timeoutMs: number }) => chatThroughLog(r, { ...o, reasoning: true })
  // Warm-up at the figure's concurrency, each kind, unmeasured (figure 2 says why: pools and backends).
  for (const fn of [text, reasoning]) await measureStreams(rig, fn, { ...level, tokens: 5 }, options.deadline, options.timeoutMs)
  const measured: Array<{ text: StreamsMeasured; reasoning: StreamsMeasured }> = []
  for (let i = 0; i < options.pairs && (i === 0 || Date.now() < options.deadline); i++) {
    const t = await measureStreams(rig, text, level, options.deadline, options.timeoutMs)
    const r = await measureStreams(rig, reasoning, level, options.deadline, options.timeoutMs)
    measured.push({ text: t, reasoning: r })
  }
  const all = (kind: 'text' | 'reasoning') => measured.map((m) => m[kind])
  const pairs = measured.map((m) => ({ text: m.text.cpuPerToken, reasoning: m.reasoning.cpuPerToken }))
  return {
    streams: options.streams,
    partsPerStream: options.parts,
    pairs,
    cpuPerPart: { reasoning: cpuPerPart(all('reasoning')), text: cpuPerPart(all('text')) },
    ratio: summarize(pairs.map((p) => p.reasoning / p.text)).p50,
    latency: {
      reasoning: summarize(all('reasoning').flatMap((m) => m.outcomes.flatMap((o) => o.latencies))),
      text: summarize(all('text').flatMap((m) => m.outcomes.flatMap((o) => o.latencies))),
    },
    lost: { reasoning: lost(all('reasoning')), text: lost(all('text')) },
    cpu: { reasoning: measured.at(-1)!.reasoning.cpu, text: measured.at(-1)!.text.cpu },
    errors: firstError(measured.flatMap((m) => [...m.text.errors, ...m.reasoning.errors])),
  }
}

/** CPU per part over several measurements: each one's µs weighted by the parts it received. */
function cpuPerPart(runs: StreamsMeasured[]): number {
  const parts = runs.map((m) => m.outcomes.reduce((n, o) => n + o.latencies.length, 0))
  const total = parts.reduce((a, b) => a + b, 0)
  return total ? runs.reduce((us, m, i) => us + m.cpuPerToken * parts[i], 0) / total : NaN
}

const lost = (runs: StreamsMeasured[]) => runs.reduce((n, m) => n + m.outcomes.reduce((k, o) => k + o.lost, 0), 0)
