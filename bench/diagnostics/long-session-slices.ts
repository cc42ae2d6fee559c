/**
 * Diagnostic (`npx tsx bench/diagnostics/long-session-slices.ts [rounds]`): how long one
 * long session holds this process's event loop at a stretch (figure 8's "no single session
 * blocks a loop for more than ~20 ms"), per operation, on a Postgres bench database:
 *
 *   cold open    the first open, no checkpoint yet: every event folded, a checkpoint written
 *   warm open    an open with this process's state at hand
 *   read ckpt    an open in a process that does not have the checkpoint (another process wrote it)
 *   write ckpt   an open that folds 1,000 new events and writes a checkpoint
 *
 * at 100k events (answers of 22 events) and 50k user messages. "Longest stretch" is the
 * longest gap between two turns of a 1 ms timer while the operation ran, less the 1 ms; each
 * open is the fold and its snapshot body read to the end, as the route streams it.
 */
import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { createServer } from '@/lib/a2/server'
import { forgetFolds } from '@/lib/a2/internal/checkpoints'
import { chat } from '@/lib/chat/contract'
import { chatFold } from '@/lib/chat/checkpoint'
import { snapshotResponse } from '@/lib/chat/snapshot'
import { seedLongHistory } from '@/test/long-history'
import { createBenchDb, openBenchStore } from '../lib/db'

const ROUNDS = Number(process.argv[2] ?? 3)

/**
 * The longest gap between turns of a 1 ms timer while `fn` runs: how long the loop was held at
 * a stretch, by the wall clock and by the main thread's CPU time in that gap (on a loaded
 * machine the wall clock counts time the process was not scheduled at all).
 */
async function measured<T>(fn: () => Promise<T>): Promise<{ ms: number; totalCpu: number; stretch: number; cpu: number; value: T }> {
  let last = performance.now()
  let lastCpu = cpuMs()
  let longest = 0
  let longestCpu = 0
  let window = ''
  let lastHr = process.hrtime.bigint() / 1000n
  const tick = () => {
    const now = performance.now()
    const hr = process.hrtime.bigint() / 1000n
    const cpu = cpuMs()
    longest = Math.max(longest, now - last)
    if (cpu - lastCpu > longestCpu) window = `${lastHr}-${hr}`
    longestCpu = Math.max(longestCpu, cpu - lastCpu)
    last = now
    lastCpu = cpu
    lastHr = hr
  }
  const timer = setInterval(tick, 1)
  const started = performance.now()
  const startedCpu = cpuMs()
  try {
    const value = await fn()
    const ms = performance.now() - started
    const totalCpu = cpuMs() - startedCpu
    tick()
    if (process.env.WINDOWS) console.log(`window ${window}`)
    return { ms, totalCpu, stretch: Math.max(0, longest - 1), cpu: longestCpu, value }
  } finally {
    clearInterval(timer)
  }
}

/** CPU time of this process's main thread (Linux schedstat, ns): the loop's own work, not GC helpers' nor time off the CPU. */
const SCHEDSTAT = `/proc/self/task/${process.pid}/schedstat`
function cpuMs(): number {
  return Number(readFileSync(SCHEDSTAT, 'utf8').split(' ')[0]) / 1e6
}

const db = await createBenchDb()
const store = await openBenchStore('postgres', db.url)
const server = createServer({ contract: chat, consumers: [], store })

async function open(id: string): Promise<number> {
  const response = snapshotResponse({ kind: 'first' }, await server.fold(id, 'bench', chatFold))
  return (await response.arrayBuffer()).byteLength
}

/** 1,012 more events: 46 answers of 22 events after `lastAnswer`, or user messages alone. */
async function appendMore(id: string, lastAnswer: string | undefined): Promise<void> {
  if (lastAnswer === undefined) {
    for (let i = 0; i < 1_012; i += 506) {
      await server.append(id, ...Array.from({ length: 506 }, (_, j) => ({ type: 'message' as const, payload: { text: `more ${i + j}` } })))
    }
    return
  }
  let after = lastAnswer
  for (let answer = 0; answer < 46; answer++) {
    const [message] = await server.append(id, { type: 'message', payload: { text: `more ${answer}`, after } })
    const [generate] = await server.append(id, { type: 'generate', payload: { for: message.id } })
    const of = generate.id
    await server.append(
      id,
      ...Array.from({ length: 19 }, () => ({ type: 'chunk' as const, payload: { of, attempt: 1, delta: 'a token of some answer ' } })),
      { type: 'finished', payload: { of, attempt: 1, reason: 'stop' } },
    )
    after = of
  }
}

const fmt = (m: { ms: number; totalCpu: number; stretch: number; cpu: number }) =>
  `${m.ms.toFixed(1).padStart(7)} ms (cpu ${m.totalCpu.toFixed(1).padStart(6)} ms), longest stretch ${m.stretch.toFixed(1).padStart(5)} ms (cpu ${m.cpu.toFixed(1).padStart(5)} ms)`

try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const level of [
      { label: '100k events', answers: 4_545, messagesOnly: false },
      { label: '50k user messages', answers: 50_000, messagesOnly: true },
    ]) {
      const { id } = await server.sessions.create('bench')
      const { head } = await seedLongHistory(store, id, { ...level, delta: 'a token of some answer ' })
      forgetFolds()
      const cold = await measured(() => open(id))
      const warm = await measured(() => open(id))
      forgetFolds()
      const read = await measured(() => open(id))
      await appendMore(id, level.messagesOnly ? undefined : `e${head - 21}`)
      const write = await measured(() => open(id))
      console.log(
        `round ${round} ${level.label} (${head} events, ${(cold.value / 1024 / 1024).toFixed(1)} MiB):\n` +
          `  cold open  ${fmt(cold)}\n  warm open  ${fmt(warm)}\n  read ckpt  ${fmt(read)}\n  write ckpt ${fmt(write)}`,
      )
      await server.sessions.delete(id, 'bench')
    }
  }
} finally {
  await store.close()
  await db.drop()
}
