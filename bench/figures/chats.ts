/**
 * One chat as a browser sees it, through the log or through the baseline route, with
 * every token timed from the upstream writing it (tokenTimes[i]) to the SSE client
 * receiving it — matched by content, each token being unique to its request. Optionally
 * stopped after the client has seen `stopAfter` tokens (the scale figure).
 */
import { performance } from 'node:perf_hooks'
import type { ChatRig } from '../lib/rig'
import { OWNER, openSse } from '../lib/http'
import { prompt, reasoningPrompt, tokenTimes } from '../lib/upstream'
import { within } from '../lib/time'
import { summarize, type Summary } from '../lib/stats'

export interface ChatOutcome {
  /** Upstream write → SSE client receipt, ms, one per token received. */
  latencies: number[]
  /** Tokens the upstream wrote that the client never received (stopped chats: before the stop only). */
  lost: number
  /** Stopped chats: push accepted (or client gone, baseline) → upstream closed. */
  stopMs?: number
  closedEarly?: boolean
  /**
   * Through the log only, each token's latency split at the moment its append transaction
   * began (the event's created_at is the transaction's now(); the database runs on this
   * machine's clock): upstream → append began (the worker: the AI SDK, waiting for the
   * previous batch), and append began → client (commit, NOTIFY, the tail's read, SSE).
   */
  split?: { toAppend: number[]; toClient: number[] }
  /** Through the log only: tokens per append transaction (chunks sharing a created_at). */
  batches?: number[]
}

let seq = 0

/** The upstream's tokens in a chunk's delta (each is a word and its trailing space: bench/lib/upstream.ts). */
export const tokensOf = (delta: string): string[] => delta.match(/\S+\s*/g) ?? []

/**
 * `reasoning`: the answer's parts are all reasoning deltas (`reasoning` events, timed as chunks
 * are), no text: figure 12.
 */
export async function chatThroughLog(
  rig: ChatRig,
  options: { tokens: number; stopAfter?: number; timeoutMs?: number; reasoning?: boolean },
): Promise<ChatOutcome> {
  const tag = `log${process.pid}x${++seq}`
  const timeoutMs = options.timeoutMs ?? 60_000
  const { id } = await rig.chat.sessions.create(OWNER)
  let cancelPushed = false
  let ended = false
  const received = new Map<string, number>()
  const appendedAt = new Map<string, number>()
  let lastIndex = -1
  let markFinished!: () => void
  let markStopPoint!: () => void
  const finished = new Promise<void>((resolve) => (markFinished = resolve))
  const stopPoint = new Promise<void>((resolve) => (markStopPoint = resolve))
  const client = openSse(`${rig.http.url}/a2/${id}?after=-1`, ({ data, at }) => {
    lastIndex = data.index
    if (data.type === 'chunk' || data.type === 'reasoning') {
      // A chunk (or reasoning event) carries the tokens that waited for one append together
      // (generate joins them): each is timed at the event's arrival.
      for (const token of tokensOf(data.payload.delta)) {
        received.set(token, at)
        appendedAt.set(token, Date.parse(data.createdAt))
        if (received.size === options.stopAfter) markStopPoint()
      }
    } else if (data.type === 'finished') {
      ended = true
      markFinished()
    }
  })
  try {
    await within(client.opened, timeoutMs, 'SSE tail to open')
    await rig.chat.push(id, OWNER, {
      events: [
        { id: 'm', type: 'message', payload: { text: options.reasoning ? reasoningPrompt(tag, options.tokens) : prompt(tag, options.tokens) } },
        { id: 'g', type: 'generate', payload: { for: 'm' } },
      ],
    })
    let stopMs: number | undefined
    let closedEarly: boolean | undefined
    if (options.stopAfter) {
      await within(stopPoint, timeoutMs, `token ${options.stopAfter} to reach the client`)
      cancelPushed = true
      await rig.chat.push(id, OWNER, { id: 'c', type: 'cancelled', payload: { of: 'g', lastSeenIndex: lastIndex } })
      const accepted = performance.now()
      const request = rig.byTag.get(tag)!
      await within(request.closed, timeoutMs, 'upstream to close after Stop')
      stopMs = request.closedAt! - accepted
      closedEarly = request.closedEarly
    }
    await within(finished, timeoutMs, 'the finished event')
    const request = rig.byTag.get(tag)!
    const times = tokenTimes(request, tag)
    const split = { toAppend: [] as number[], toClient: [] as number[] }
    const perTransaction = new Map<number, number>()
    for (const [delta, at] of received) {
      const sent = times.get(delta)
      const began = appendedAt.get(delta)!
      perTransaction.set(began, (perTransaction.get(began) ?? 0) + 1)
      if (sent === undefined) continue
      split.toAppend.push(began - (performance.timeOrigin + sent))
      split.toClient.push(performance.timeOrigin + at - began)
    }
    return {
      ...timedTokens(rig, tag, received, options.stopAfter ? undefined : options.tokens),
      stopMs,
      closedEarly,
      split,
      batches: [...perTransaction.values()],
    }
  } finally {
    client.close()
    // A chat that failed half-way must not keep its run streaming into the next figure.
    if (!cancelPushed && !ended) {
      await rig.chat.push(id, OWNER, { id: 'c', type: 'cancelled', payload: { of: 'g', lastSeenIndex: lastIndex } }).catch(() => {})
    }
  }
}

export async function chatDirect(rig: ChatRig, options: { tokens: number; stopAfter?: number; timeoutMs?: number }): Promise<ChatOutcome> {
  const tag = `dir${process.pid}x${++seq}`
  const timeoutMs = options.timeoutMs ?? 60_000
  const received = new Map<string, number>()
  let markFinished!: () => void
  let markStopPoint!: () => void
  const finished = new Promise<void>((resolve) => (markFinished = resolve))
  const stopPoint = new Promise<void>((resolve) => (markStopPoint = resolve))
  const client = openSse(`${rig.http.url}/direct/${tag}?tokens=${options.tokens}`, ({ data, at }) => {
    if (data.type === 'chunk') {
      received.set(data.delta, at)
      if (received.size === options.stopAfter) markStopPoint()
    } else if (data.type === 'finished') markFinished()
  })
  try {
    await within(client.opened, timeoutMs, 'direct stream to open')
    let stopMs: number | undefined
    let closedEarly: boolean | undefined
    if (options.stopAfter) {
      await within(stopPoint, timeoutMs, `token ${options.stopAfter} to reach the client`)
      // A browser stopping a plain streaming route closes its connection.
      const stoppedAt = performance.now()
      client.close()
      const request = rig.byTag.get(tag)!
      await within(request.closed, timeoutMs, 'upstream to close after the client left')
      stopMs = request.closedAt! - stoppedAt
      closedEarly = request.closedEarly
    } else {
      await within(finished, timeoutMs, 'the direct stream to finish')
    }
    return { ...timedTokens(rig, tag, received, options.stopAfter ? undefined : options.tokens), stopMs, closedEarly }
  } finally {
    client.close()
  }
}

/** Each received token's latency from the upstream writing it (matched by its text), and how many of `expected` never came. */
export function timedTokens(rig: ChatRig, tag: string, received: Map<string, number>, expected?: number): { latencies: number[]; lost: number } {
  const request = rig.byTag.get(tag)
  if (!request) throw new Error(`no upstream request for ${tag}`)
  const times = tokenTimes(request, tag)
  const latencies: number[] = []
  for (const [delta, at] of received) {
    const sent = times.get(delta)
    if (sent !== undefined) latencies.push(at - sent)
  }
  return { latencies, lost: expected === undefined ? 0 : expected - latencies.length }
}

/** Where the log's token latency goes (split at the append's start) and its batch sizes, over many chats. */
/** Where a token's time went on the log path, and how the chunks were batched. */
export interface LogPath {
  /** Ours split where the append began: upstream → append began, append began → client (ms, ±1 ms: created_at is kept to the ms). */
  split: { toAppend: Summary; toClient: Summary }
  /** Tokens per append transaction, through the log. */
  batch: Summary
}

export function summarizeLogPath(outcomes: readonly ChatOutcome[]): LogPath {
  return {
    split: {
      toAppend: summarize(outcomes.flatMap((o) => o.split?.toAppend ?? [])),
      toClient: summarize(outcomes.flatMap((o) => o.split?.toClient ?? [])),
    },
    batch: summarize(outcomes.flatMap((o) => o.batches ?? [])),
  }
}
