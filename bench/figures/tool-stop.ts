/**
 * Figure 11 — a tool call's request closed after a Stop mid-call: from the cancel push being
 * accepted to the webhook receiver seeing the sendWebhook tool's POST socket close, with the run
 * on another process (the worker child of a rig of its own, opened with `webhook: true`), beside
 * figure 1's measurement (the model's request closed after a Stop) taken in the same pool and
 * rig, one of each in turn, so both share the load of the moment.
 *
 * Each sample (../lib/stop-midway.ts): the model (the bench upstream) is asked to call
 * sendWebhook with the sample's tag as its message; the tool's POST reaches the receiver
 * (../lib/webhook.ts), which holds it open; a random 0–60 ms later the Stop is pushed. The Stop
 * reaches the tool through the run's signal (ctx.effect passes it to the tool's fetch), so the
 * POST's socket closes; the tool asks the receiver, which has no delivery, and the call ends
 * `cancelled`. The notes count the runs that ended CANCELLED and the calls whose state says so.
 *
 * With the rig's MCP servers, two more rows take their turns in the same pool: a Stop while the
 * model's call of an MCP tool (`deliver`, held by the server) is in flight, over Streamable HTTP
 * and over stdio, until the server has the cancellation (../lib/mcp.ts).
 */
import { sql } from 'drizzle-orm'
import type { ChatRig, CpuSample } from '../lib/rig'
import { prompt } from '../lib/upstream'
import { runPool, firstError } from '../lib/pool'
import { summarize, type Summary } from '../lib/stats'
import { randomBetween, sleep } from '../lib/time'
import { stopMidway, type StopSample } from '../lib/stop-midway'
import { rows } from '../lib/db'
import { countGenerateRuns, stopThroughLog } from './stop'
import { OWNER } from '../lib/http'
import { argsHash } from '@/lib/chat/tools/approval-args'
import type { ChatEvent } from '@/lib/chat/contract'

let seq = 0

/** One Stop while the answer's sendWebhook POST is held open by the receiver: accepted → its socket closed. */
export function stopMidToolCall(rig: ChatRig, pointMs: () => number): Promise<StopSample> {
  const tag = `tool${process.pid}x${++seq}`
  return stopMidway(rig, {
    // The upstream streams the call's arguments (5 characters a delta), then the SDK runs the tool.
    text: `${prompt(tag, 5)} [[call sendWebhook {"message":"${tag}"}]]`,
    inFlight: () => rig.webhook!.wait(tag, 20_000),
    pointMs,
    what: 'webhook POST',
  })
}

/** One Stop while the answer's MCP call (`deliver`, held by the server) is in flight: accepted → the server has the cancellation. */
export function stopMidMcpCall(rig: ChatRig, pointMs: () => number, transport: 'http' | 'stdio'): Promise<StopSample> {
  const tag = `mcp${transport}${process.pid}x${++seq}`
  return stopMidway(rig, {
    text: `${prompt(tag, 5)} [[call ${transport}__deliver {"message":"${tag}"}]]`,
    inFlight: () => rig.mcp![transport].wait(tag, 20_000),
    pointMs,
    what: `MCP call over ${transport}`,
  })
}

/**
 * One approval's round trip: a call of `gated__deliver` waits for approval (its `tool.state` in
 * the log), the user's `tool.decision` is pushed, and the time runs until the MCP server has the
 * call (the approvals consumer's run dispatched it). The call is then stopped, as a user would.
 */
export async function approvalRoundTrip(rig: ChatRig): Promise<number> {
  const tag = `approve${process.pid}x${++seq}`
  const { id } = await rig.chat.sessions.create(OWNER)
  await rig.chat.push(id, OWNER, {
    events: [
      { id: 'm', type: 'message', payload: { text: `${prompt(tag, 5)} [[call gated__deliver {"message":"${tag}"}]]` } },
      { id: 'g', type: 'generate', payload: { for: 'm' } },
    ],
  })
  const waiting = await until(async () => {
    const events = (await rig.chat.read(id, OWNER, { limit: 1_000 })) as ChatEvent[]
    return events.find((e) => e.type === 'tool.state' && e.payload.state === 'awaiting-approval')
  }, 20_000)
  if (waiting?.type !== 'tool.state') throw new Error(`the call ${tag} never waited for approval`)
  const arrived = rig.mcp!.http.wait(tag, 20_000)
  const decided = performance.now()
  const { call, input } = waiting.payload
  await rig.chat.push(id, OWNER, { type: 'tool.decision', payload: { of: 'g', call, decision: 'approve', args: argsHash(input), cancelVersion: 0 } })
  await arrived
  const ms = performance.now() - decided
  await rig.chat.push(id, OWNER, { type: 'cancelled', payload: { of: 'g', lastSeenIndex: 1 } })
  return ms
}

/** Polls `probe` every 10 ms until it gives something, or `ms` pass. */
async function until<T>(probe: () => Promise<T | undefined>, ms: number): Promise<T | undefined> {
  const end = performance.now() + ms
  for (let found = await probe(); performance.now() < end; found = await probe()) {
    if (found !== undefined) return found
    await sleep(10)
  }
  return undefined
}

export interface ToolStopFigure {
  /** Stop accepted → the receiver saw the tool's POST close. */
  ours: Summary
  oursFromCalled: Summary
  /**
   * Stop accepted → the MCP server has the cancellation: over Streamable HTTP the call's response
   * stream closed, over stdio `notifications/cancelled` naming its request id (the rig's `mcp`).
   */
  mcp?: { http: Summary; stdio: Summary }
  /** The user's approval pushed → the MCP server has the call (the rig's `gated` server), in the same pool. */
  approval?: Summary
  /** Figure 1's measurement, in the same pool: Stop accepted → the upstream saw the model's request close. */
  baseline: Summary
  runsCancelled: { cancelled: number; total: number }
  /** The tool calls' last `tool.state` in the log, by state. */
  toolStates: Record<string, number>
  concurrency: number
  cpu: CpuSample
  errors?: string
}

export async function toolStopFigure(rig: ChatRig, options: { stops: number; concurrency: number; deadline: number }): Promise<ToolStopFigure> {
  const point = () => randomBetween(0, 60)
  // Warm-up (JIT, pools, the tool path's first calls): not counted.
  await runPool(4, 4, (i) => (i % 2 ? stopMidToolCall(rig, point) : stopThroughLog(rig, point)))
  if (rig.mcp)
    await runPool(6, 3, async (i) => void (i % 3 === 2 ? await approvalRoundTrip(rig) : await stopMidMcpCall(rig, point, i % 3 ? 'http' : 'stdio')))
  await rig.settled()
  const before = await countGenerateRuns(rig)
  const statesBefore = await toolStates(rig)

  await rig.cpu()
  // The webhook's call, the model's request and (with the rig's MCP servers) an MCP call over each
  // transport take turns: all alternate under one load.
  const tool: StopSample[] = []
  const model: StopSample[] = []
  const mcp = { http: [] as StopSample[], stdio: [] as StopSample[] }
  const approvals: number[] = []
  const kinds = rig.mcp ? 5 : 2
  const run = await runPool(
    options.stops * kinds,
    options.concurrency,
    async (i) => {
      const kind = i % kinds
      if (kind === 0) tool.push(await stopMidToolCall(rig, point))
      else if (kind === 1) model.push(await stopThroughLog(rig, point))
      else if (kind === 2) mcp.http.push(await stopMidMcpCall(rig, point, 'http'))
      else if (kind === 3) mcp.stdio.push(await stopMidMcpCall(rig, point, 'stdio'))
      else approvals.push(await approvalRoundTrip(rig))
    },
    { deadline: options.deadline },
  )
  const cpu = await rig.cpu()
  await rig.settled()
  const after = await countGenerateRuns(rig)
  const statesAfter = await toolStates(rig)

  return {
    ours: summarize(tool.map((s) => s.fromAccepted)),
    oursFromCalled: summarize(tool.map((s) => s.fromCalled)),
    baseline: summarize(model.map((s) => s.fromAccepted)),
    ...(rig.mcp && {
      mcp: { http: summarize(mcp.http.map((s) => s.fromAccepted)), stdio: summarize(mcp.stdio.map((s) => s.fromAccepted)) },
      approval: summarize(approvals),
    }),
    runsCancelled: { cancelled: after.cancelled - before.cancelled, total: after.total - before.total },
    toolStates: Object.fromEntries(Object.entries(statesAfter).map(([state, n]) => [state, n - (statesBefore[state] ?? 0)])),
    concurrency: options.concurrency,
    cpu,
    errors: firstError(run.errors),
  }
}

/** Every tool call's last state in the bench database, counted by state. */
async function toolStates(rig: ChatRig): Promise<Record<string, number>> {
  const found = await rows<{ state: string; n: number }>(
    rig.store,
    sql`select state, count(*)::int as n from (
          select distinct on (session_id, payload ->> 'call') payload ->> 'state' as state
          from a2_events where type = 'tool.state' order by session_id, payload ->> 'call', index desc
        ) last group by state`,
  )
  return Object.fromEntries(found.map((r) => [r.state, Number(r.n)]))
}
