/**
 * Figure 16 — beside the anchor people use for resumable chat streams: vercel's
 * `resumable-stream` on Redis (`anchor-child.ts`, the AI SDK's recipe), fed by the same upstream
 * at 100 streams, in the same run as ours (through the log, figure 2's chat) and the direct
 * route (figure 2's baseline): token latency (upstream writes a token → the SSE client has it)
 * and CPU per token of every process.
 *
 * The anchor's reader is its POST's, as `useChat` reads it: the answer comes from the producer's
 * memory, and Redis sees one SUBSCRIBE and two SETs a stream, no chunk (the library's common
 * case; chunks go through Redis pub/sub only to a reader that resumes, `resumeExistingStream`).
 *
 * The three sides take turns, one round of `streams` chats each, the order rotated each round;
 * every side's CPU counts the same processes (this one, the worker child, the bench database's
 * Postgres, the anchor server and redis-server).
 */
import type { ChatRig } from '../lib/rig'
import type { Child } from '../lib/children'
import { openSse } from '../lib/http'
import { firstError, runPool } from '../lib/pool'
import { row, type Row } from '../lib/report'
import { fmt, summarize, type Summary } from '../lib/stats'
import { within } from '../lib/time'
import { pidsCpu } from '../lib/machine'
import { chatDirect, chatThroughLog, summarizeLogPath, timedTokens, tokensOf, type ChatOutcome, type LogPath } from './chats'
import { measureStreams, type StreamsMeasured } from './tokens'

const SIDES = ['ours', 'direct', 'anchor'] as const
type Side = (typeof SIDES)[number]

const LABELS: Record<Side, string> = {
  ours: 'ours (the log)',
  direct: 'the direct route',
  anchor: 'resumable-stream on Redis',
}

export interface AnchorFigure {
  streams: number
  tokensPerStream: number
  rounds: number
  redis: string
  sides: Record<
    Side,
    {
      latency: Summary
      cpuPerToken: number[]
      /** Each round's length (100 tokens at 50/s are 2 s, the streams started within 500 ms): how much they overlapped. */
      wallMs: number[]
      cpu: StreamsMeasured['cpu'][]
      /** redis-server's share of `cpu[i].othersPct` (% of one core). */
      redisPct: number[]
      failed: number
      lost: number
    }
  >
  /** Where ours' token latency went: split where its append began (figure 2's split). */
  logPath: LogPath
  errors?: string
}

let seq = 0

/** One chat on the anchor: POSTed, its answer read from the response as SSE. */
export async function chatAnchor(rig: ChatRig, anchorUrl: string, options: { tokens: number; timeoutMs: number }): Promise<ChatOutcome> {
  const tag = `anc${process.pid}x${++seq}`
  const received = new Map<string, number>()
  let markFinished!: () => void
  const finished = new Promise<void>((resolve) => (markFinished = resolve))
  const client = openSse(
    `${anchorUrl}/chat/${tag}?tokens=${options.tokens}`,
    ({ data, at }) => {
      if (data.type === 'text-delta') for (const token of tokensOf(data.delta)) received.set(token, at)
      else if (data.type === 'finish') markFinished()
    },
    { method: 'POST' },
  )
  try {
    await within(client.opened, options.timeoutMs, 'the anchor POST to answer')
    await within(finished, options.timeoutMs, 'the anchor stream to finish')
    return timedTokens(rig, tag, received, options.tokens)
  } finally {
    client.close()
  }
}

export async function anchorFigure(
  rig: ChatRig,
  anchor: { child: Child; redisPid: number; redis: string },
  options: { streams: number; tokens: number; rounds: number; deadline: number; timeoutMs: number },
): Promise<AnchorFigure> {
  const url: string = anchor.child.ready.url
  const chats: Record<Side, (r: ChatRig, o: { tokens: number; timeoutMs: number }) => Promise<ChatOutcome>> = {
    ours: chatThroughLog,
    direct: chatDirect,
    anchor: (r, o) => chatAnchor(r, url, o),
  }
  const outside = {
    others: async () => [anchor.child.process.pid!, anchor.redisPid],
    settled: async () => void (await anchor.child.call({ cmd: 'settled' })),
  }
  const level = { streams: options.streams, tokens: options.tokens, rounds: 1 }
  // Unmeasured rounds at the level's concurrency, each side (figure 2's reason: pools and connections open).
  for (const side of SIDES) {
    await runPool(options.streams, options.streams, () => chats[side](rig, { tokens: 5, timeoutMs: options.timeoutMs })).catch(() => undefined)
    await rig.settled().catch(() => undefined)
    await outside.settled().catch(() => undefined)
  }
  const measured = Object.fromEntries(SIDES.map((s) => [s, [] as StreamsMeasured[]])) as Record<Side, StreamsMeasured[]>
  const redisPct = Object.fromEntries(SIDES.map((s) => [s, [] as number[]])) as Record<Side, number[]>
  for (let round = 0; round < options.rounds && (round === 0 || Date.now() < options.deadline); round++) {
    // Rotated: each side runs first, second… in turn, so drift in the machine's load spreads over all.
    const order = SIDES.map((_, i) => SIDES[(i + round) % SIDES.length])
    for (const side of order) {
      const redis = await pidsCpu(async () => [anchor.redisPid])
      measured[side].push(await measureStreams(rig, chats[side], level, options.deadline, options.timeoutMs, outside))
      redisPct[side].push(await redis.stop())
    }
  }
  const sides = Object.fromEntries(
    SIDES.map((side) => {
      const m = measured[side]
      const outcomes = m.flatMap((x) => x.outcomes)
      return [
        side,
        {
          latency: summarize(outcomes.flatMap((o) => o.latencies)),
          cpuPerToken: m.map((x) => x.cpuPerToken),
          wallMs: m.map((x) => x.wallMs),
          cpu: m.map((x) => x.cpu),
          redisPct: redisPct[side],
          failed: m.reduce((a, x) => a + x.failed, 0),
          lost: outcomes.reduce((a, o) => a + o.lost, 0),
        },
      ]
    }),
  ) as AnchorFigure['sides']
  return {
    streams: options.streams,
    tokensPerStream: options.tokens,
    rounds: measured.ours.length,
    redis: anchor.redis,
    sides,
    logPath: summarizeLogPath(measured.ours.flatMap((x) => x.outcomes)),
    errors: firstError(SIDES.flatMap((s) => measured[s].flatMap((x) => x.errors))),
  }
}

const median = (xs: number[]) => summarize(xs).p50

/** Issue 37's target: ours ≤ 1.5× the anchor, token latency and CPU per token; the direct route beside them. */
export function anchorRows(a: AnchorFigure | { skipped: string }): Row[] {
  if ('skipped' in a) return []
  const out: Row[] = []
  const s = `@${a.streams} streams`
  const ours = a.sides.ours
  for (const side of ['anchor', 'direct'] as const) {
    const base = a.sides[side]
    const extra = (value: number) =>
      side === 'anchor' ? { baselineLabel: '(resumable-stream)', target: { op: '<=' as const, value: 1.5 * value } } : { baselineLabel: '(direct)' }
    out.push(row(`16 token latency p50 ${s}, ours vs ${LABELS[side]}`, 'ms', ours.latency.p50, base.latency.p50, extra(base.latency.p50)))
    out.push(row(`16 token latency p99 ${s}, ours vs ${LABELS[side]}`, 'ms', ours.latency.p99, base.latency.p99, extra(base.latency.p99)))
    const cpu = median(base.cpuPerToken)
    out.push(row(`16 CPU per token, all processes ${s}, ours vs ${LABELS[side]}`, 'µs', median(ours.cpuPerToken), cpu, extra(cpu)))
  }
  return out
}

export function anchorNotes(a: AnchorFigure | { skipped: string }, cpuText: (c: StreamsMeasured['cpu']) => string): string[] {
  if ('skipped' in a) return [`16: skipped, ${a.skipped}`]
  const notes = [
    `16: ${a.rounds} rounds of ${a.streams} streams × ${a.tokensPerStream} tokens at 50 tokens/s a side, sides rotated each round; ${a.redis}, ` +
      'defaults (no config file: RDB save 3600 1 300 100 60 10000, no AOF), a temp dir' +
      (a.errors ? `; ${a.errors}` : ''),
  ]
  for (const side of SIDES) {
    const x = a.sides[side]
    const failed = x.failed || x.lost ? `; failed ${x.failed}, lost tokens ${x.lost}` : ''
    notes.push(
      `   ${LABELS[side]}: ${x.latency.n} tokens, p50 ${fmt(x.latency.p50)} / p99 ${fmt(x.latency.p99)} ms; CPU µs/token by round ${x.cpuPerToken.map((c) => fmt(c)).join(' / ')}, rounds took ${x.wallMs.map((w) => fmt(w / 1000)).join(' / ')} s${failed}`,
    )
    notes.push(`      CPU (last round) ${cpuText(x.cpu[x.cpu.length - 1])}, of which redis-server ${x.redisPct[x.redisPct.length - 1]}%`)
  }
  const { toAppend, toClient } = a.logPath.split
  notes.push(
    `   ours split where the append began: upstream → append began p50 ${fmt(toAppend.p50)} / p99 ${fmt(toAppend.p99)} ms, ` +
      `append began → client p50 ${fmt(toClient.p50)} / p99 ${fmt(toClient.p99)} ms; tokens per append p50 ${fmt(a.logPath.batch.p50)}`,
  )
  notes.push(
    '   CPU per token: the median of the rounds; every side counts this process, the worker child, Postgres, the anchor server and redis-server.',
  )
  return notes
}
