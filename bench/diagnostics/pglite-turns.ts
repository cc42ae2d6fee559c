/**
 * Diagnostic (`npx tsx bench/diagnostics/pglite-turns.ts [chats=500] [ours|direct|both]`): figure 6's
 * chats at one level on PGlite, through the log and then through the direct route, with the
 * event loop's turns measured beside what figure 6 reports: how many connections the bench's
 * HTTP server accepted (Node accepts one a turn), the busy turns' length (turns over 1 ms: a
 * setImmediate chain counts every turn, and an idle loop spins through empty ones), this
 * process's CPU a chat, the Stop and token latencies, and the tokens a chunk append carried.
 */
import { performance } from 'node:perf_hooks'
import { openBenchStore } from '../lib/db'
import { openChatRig } from '../lib/rig'
import { runPool } from '../lib/pool'
import { summarize } from '../lib/stats'
import { randomBetween, randomInt, sleep } from '../lib/time'
import { chatDirect, chatThroughLog } from '../figures/chats'

const chats = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 500)
const which = process.argv.find((a) => ['ours', 'direct', 'both'].includes(a)) ?? 'both'

let counting = false
let last = 0
let turns: number[] = []
const tick = () => {
  const now = performance.now()
  turns.push(now - last)
  last = now
  if (counting) setImmediate(tick)
}

const store = await openBenchStore('pglite')
const rig = await openChatRig({ kind: 'pglite', store, tokenMs: 20 })
let accepted = 0
rig.http.server.on('connection', () => accepted++)
for (const side of which === 'both' ? (['ours', 'direct'] as const) : [which as 'ours' | 'direct']) {
  turns = []
  accepted = 0
  counting = true
  last = performance.now()
  setImmediate(tick)
  const cpu = process.cpuUsage()
  const started = performance.now()
  const result = await runPool(chats, chats, async () => {
    await sleep(randomBetween(0, 1000))
    return (side === 'ours' ? chatThroughLog : chatDirect)(rig, { tokens: 400, stopAfter: randomInt(3, 40), timeoutMs: 10_000 })
  })
  const wall = (performance.now() - started) / 1000
  counting = false
  const used = process.cpuUsage(cpu)
  const busy = summarize(turns.filter((ms) => ms > 1))
  const stop = summarize(result.results.map((o) => o.stopMs!))
  const token = summarize(result.results.flatMap((o) => o.latencies))
  const batches = result.results.flatMap((o) => o.batches ?? [])
  console.log(
    `${side}: ${result.errors.length} of ${chats} failed, ${accepted} connections accepted in ${wall.toFixed(1)} s; ` +
      `busy turns ${busy.n}, p50 ${busy.p50.toFixed(1)} p99 ${busy.p99.toFixed(0)} ms; CPU ${((used.user + used.system) / 1000 / chats).toFixed(1)} ms a chat; ` +
      `Stop p50 ${stop.p50.toFixed(1)} p99 ${stop.p99.toFixed(0)} ms; token p50 ${token.p50.toFixed(0)} p99 ${token.p99.toFixed(0)} ms` +
      (batches.length ? `; tokens an append ${(batches.reduce((a, b) => a + b, 0) / batches.length).toFixed(2)}` : ''),
  )
  await rig.settled(20_000).catch(() => {})
}
await rig.close()
await store.close()
process.exit(0)
