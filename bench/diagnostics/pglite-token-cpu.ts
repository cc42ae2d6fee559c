/**
 * Diagnostic (`npx tsx bench/diagnostics/pglite-token-cpu.ts [streams=20]`): what a chat costs this
 * one process on PGlite, split into a fixed part per chat and a part per token, ours against the
 * direct route. `streams` chats at once run to their end (no Stop) at 5 and at 100 tokens; the
 * difference gives the CPU per token, the rest is per chat. Three trials, ours and direct
 * alternated, after one unmeasured round of each (statements prepared, the JIT warm).
 *
 * Why it matters for figure 6: everything is this process, and when its loop is saturated every
 * stream's next token is due once per turn (the upstream paces tokens 20 ms apart), so a turn
 * lasts about (streams running) × (CPU a token) plus the turn's share of chats starting and
 * ending. A Stop reaches the in-process upstream one to two turns after its signal fires, and
 * Node accepts one connection per turn, so both scale with these two numbers.
 */
import { openBenchStore } from '../lib/db'
import { openChatRig } from '../lib/rig'
import { runPool } from '../lib/pool'
import { chatDirect, chatThroughLog } from '../figures/chats'

const streams = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 20)
const store = await openBenchStore('pglite')
const rig = await openChatRig({ kind: 'pglite', store, tokenMs: 20 })

/** CPU of this process per chat (ms), `streams` chats of `tokens` tokens at once. */
const cpuPerChat = async (side: 'ours' | 'direct', tokens: number): Promise<number> => {
  const before = process.cpuUsage()
  const result = await runPool(streams, streams, () => (side === 'ours' ? chatThroughLog : chatDirect)(rig, { tokens, timeoutMs: 60_000 }))
  const used = process.cpuUsage(before)
  await rig.settled(20_000).catch(() => {})
  if (result.errors.length) console.log(`  ${side} @${tokens}: ${result.errors.length} failed`)
  return (used.user + used.system) / 1000 / streams
}
const split = (at5: number, at100: number) => {
  const perToken = (at100 - at5) / 95
  return { fixed: at5 - 5 * perToken, perTokenUs: 1000 * perToken }
}

await cpuPerChat('ours', 20)
await cpuPerChat('direct', 20)
for (let trial = 1; trial <= 3; trial++) {
  const ours = split(await cpuPerChat('ours', 5), await cpuPerChat('ours', 100))
  const direct = split(await cpuPerChat('direct', 5), await cpuPerChat('direct', 100))
  console.log(
    `trial ${trial}: ours ${ours.fixed.toFixed(1)} ms a chat + ${ours.perTokenUs.toFixed(0)} µs a token; ` +
      `direct ${direct.fixed.toFixed(1)} ms + ${direct.perTokenUs.toFixed(0)} µs (${(ours.fixed / direct.fixed).toFixed(2)}×, ${(ours.perTokenUs / direct.perTokenUs).toFixed(2)}×)`,
  )
}
await rig.close()
await store.close()
process.exit(0)
