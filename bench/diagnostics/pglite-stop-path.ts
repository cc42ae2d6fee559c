/**
 * Diagnostic (`npx tsx bench/diagnostics/pglite-stop-path.ts [chats=100] [--profile]`): figure 6's
 * chats at one level on PGlite, with each Stop's path timed and the event loop's turns measured.
 *
 * Per Stop (matched by the chat's tag): the push called → its statement answered (the push's
 * wait for PGlite's one connection and its run), → the model request's signal fired (the
 * NOTIFY reaching the attempt), → the upstream saw its request close (figure 6's Stop is
 * answered → closed), and how many loop turns each part spanned.
 *
 * Per loop turn (a setImmediate chain: one callback per turn, in the check phase): how long
 * the turn took, how much of it PGlite's WASM ran, and how many statements it ran.
 */
import { performance } from 'node:perf_hooks'
import { PGlite } from '@electric-sql/pglite'
import { openBenchStore } from '../lib/db'
import { openChatRig } from '../lib/rig'
import { runPool } from '../lib/pool'
import { summarize, type Summary } from '../lib/stats'
import { randomBetween, randomInt, sleep } from '../lib/time'
import { printTopFunctions, profileThisProcess } from '../lib/profile'
import { tagOf } from '../lib/upstream'
import { timePgliteWasm } from '../lib/pglite-wasm'
import { chatDirect, chatThroughLog } from '../figures/chats'

const chats = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 100)
const profile = process.argv.includes('--profile')

// Loop turns: one setImmediate callback per turn.
let turn = 0
let turnStart = performance.now()
let wasmThisTurn = 0
let statementsThisTurn = 0
const turns: Array<{ ms: number; wasm: number; statements: number }> = []
let counting = true
const countTurn = () => {
  const now = performance.now()
  turns.push({ ms: now - turnStart, wasm: wasmThisTurn, statements: statementsThisTurn })
  turnStart = now
  wasmThisTurn = 0
  statementsThisTurn = 0
  turn++
  if (counting) setImmediate(countTurn)
}

// PGlite's WASM time and statements, per turn.
const proto = PGlite.prototype as any
timePgliteWasm((ms) => (wasmThisTurn += ms))
const originalExclusive = proto._runExclusiveQuery
proto._runExclusiveQuery = function (this: unknown, fn: () => Promise<unknown>) {
  return originalExclusive.call(this, async () => {
    statementsThisTurn++
    return fn()
  })
}

interface Stop {
  pushCalled?: number
  pushAnswered?: number
  aborted?: number
  turnAtAnswer?: number
  turnAtAbort?: number
  turnAtClose?: number
}
const stops = new Map<string, Stop>()
const tagOfSession = new Map<string, string>()
const stopOf = (tag: string) => stops.get(tag) ?? (stops.set(tag, {}), stops.get(tag)!)

// The model request's signal firing: where the Stop reaches the AI SDK's fetch.
const originalFetch = globalThis.fetch
globalThis.fetch = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
  const tag = typeof init?.body === 'string' ? tagOf(JSON.parse(init.body))?.tag : undefined
  if (tag?.startsWith('log') && init?.signal) {
    init.signal.addEventListener('abort', () => {
      const stop = stopOf(tag)
      stop.aborted = performance.now()
      stop.turnAtAbort = turn
      void rig.byTag.wait(tag, 1_000).then((request) => request.closed.then(() => (stop.turnAtClose = turn)))
    })
  }
  return originalFetch(input, init)
}) as typeof fetch

const store = await openBenchStore('pglite')
let rig: Awaited<ReturnType<typeof openChatRig>>
rig = await openChatRig({ kind: 'pglite', store, tokenMs: 20 })
const originalPush = rig.chat.push.bind(rig.chat)
rig.chat.push = (async (sessionId: string, owner: string, body: any) => {
  const events = Array.isArray(body?.events) ? body.events : [body]
  for (const e of events) {
    const tag = e?.type === 'message' ? tagOf({ messages: [{ content: e.payload?.text }] })?.tag : undefined
    if (tag) tagOfSession.set(sessionId, tag)
  }
  const tag = tagOfSession.get(sessionId)
  const isStop = events.some((e: any) => e?.type === 'cancelled')
  const t0 = performance.now()
  const result = await originalPush(sessionId, owner, body)
  if (isStop && tag) {
    const stop = stopOf(tag)
    stop.pushCalled = t0
    stop.pushAnswered = performance.now()
    stop.turnAtAnswer = turn
  }
  return result
}) as typeof rig.chat.push

const profiler = profile ? await profileThisProcess() : undefined
setImmediate(countTurn)
const cpuAtStart = process.cpuUsage()
const started = performance.now()
const result = await runPool(chats, chats, async () => {
  await sleep(randomBetween(0, 1000))
  return chatThroughLog(rig, { tokens: 400, stopAfter: randomInt(3, 40), timeoutMs: 10_000 })
})
const wall = performance.now() - started
const cpuUsed = process.cpuUsage(cpuAtStart)
counting = false
const cpu = await rig.cpu()
if (profiler) {
  const file = await profiler.stop('bench/results/profiles/pglite-stop-path.cpuprofile')
  printTopFunctions(file, { packages: 14, functions: 30 })
}

const fmt = (s: Summary) => `p50 ${s.p50.toFixed(1)} p90 ${s.p90.toFixed(1)} p99 ${s.p99.toFixed(1)} max ${s.max.toFixed(0)}`
const closedAt = (tag: string) => rig.byTag.get(tag)?.closedAt
const complete = [...stops.entries()].filter(([tag, s]) => s.pushAnswered && s.aborted && closedAt(tag))
const parts = {
  push: complete.map(([, s]) => s.pushAnswered! - s.pushCalled!),
  answeredToAbort: complete.map(([, s]) => s.aborted! - s.pushAnswered!),
  abortToClosed: complete.map(([tag, s]) => closedAt(tag)! - s.aborted!),
  answeredToClosed: complete.map(([tag, s]) => closedAt(tag)! - s.pushAnswered!),
}
console.log(`${chats} chats: ${result.errors.length} failed; wall ${(wall / 1000).toFixed(1)} s; ${complete.length} stops timed`)
console.log(`  push called → answered      ${fmt(summarize(parts.push))} ms`)
console.log(`  answered → signal fired     ${fmt(summarize(parts.answeredToAbort))} ms (negative: fired before the push's caller resumed)`)
console.log(`  signal fired → upstream closed ${fmt(summarize(parts.abortToClosed))} ms`)
console.log(`  figure 6's Stop (answered → closed) ${fmt(summarize(parts.answeredToClosed))} ms`)
console.log(`  turns between answered and signal: ${fmt(summarize(complete.map(([, s]) => s.turnAtAbort! - s.turnAtAnswer!)))}`)
console.log(`  turns between signal and upstream closed: ${fmt(summarize(complete.map(([, s]) => s.turnAtClose! - s.turnAtAbort!)))}`)
const tokens = result.results.reduce((n, o) => n + o.latencies.length, 0)
console.log(`CPU: this process ${((cpuUsed.user + cpuUsed.system) / tokens).toFixed(0)} µs per token received (${tokens} tokens)`)
const busy = turns.slice(1)
const lengths = summarize(busy.map((t) => t.ms))
const total = busy.reduce((a, t) => a + t.ms, 0)
const wasm = busy.reduce((a, t) => a + t.wasm, 0)
console.log(`loop: ${busy.length} turns in ${(wall / 1000).toFixed(1)} s (${(busy.length / (wall / 1000)).toFixed(0)}/s); turn ${fmt(lengths)} ms`)
console.log(`  WASM ${((100 * wasm) / total).toFixed(0)}% of the loop's time; statements per turn ${fmt(summarize(busy.map((t) => t.statements)))}`)
const long = busy.filter((t) => t.ms > 20)
console.log(
  `  turns over 20 ms: ${long.length} (${((100 * long.reduce((a, t) => a + t.ms, 0)) / total).toFixed(0)}% of the time), WASM ${(
    (100 * long.reduce((a, t) => a + t.wasm, 0)) /
    Math.max(
      1,
      long.reduce((a, t) => a + t.ms, 0),
    )
  ).toFixed(0)}% of them, statements p50 ${summarize(long.map((t) => t.statements)).p50}`,
)
console.log(`this process ${cpu.parentPct.toFixed(0)}% of a core, loop delay p99 ${cpu.parentLag.p99.toFixed(0)} ms`)
// The direct route at the same level, for the CPU a chat costs without the log (nothing above counts it).
await rig.settled(20_000).catch(() => {})
const cpuBeforeDirect = process.cpuUsage()
const direct = await runPool(chats, chats, async () => {
  await sleep(randomBetween(0, 1000))
  return chatDirect(rig, { tokens: 400, stopAfter: randomInt(3, 40), timeoutMs: 10_000 })
})
const cpuDirect = process.cpuUsage(cpuBeforeDirect)
const directTokens = direct.results.reduce((n, o) => n + o.latencies.length, 0)
console.log(
  `CPU a chat (this process, all of it): ours ${((cpuUsed.user + cpuUsed.system) / 1000 / chats).toFixed(1)} ms (${tokens} tokens), ` +
    `direct route ${((cpuDirect.user + cpuDirect.system) / 1000 / chats).toFixed(1)} ms (${directTokens} tokens, ${direct.errors.length} failed)`,
)
await rig.close()
await store.close()
process.exit(0)
