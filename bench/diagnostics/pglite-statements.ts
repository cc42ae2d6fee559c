/**
 * Diagnostic (`npx tsx bench/diagnostics/pglite-statements.ts [chats=500] [--profile]`): figure 6's
 * chats at one level on PGlite, with every statement PGlite runs timed — how long it queued
 * behind the others for PGlite's one connection, and how long it ran (the WASM runs on this
 * process's event loop, so that is loop time too) — grouped by statement shape, plus how long
 * each SSE tail took to open. PGlite's own methods are wrapped in this process only.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { performance } from 'node:perf_hooks'
import { PGlite } from '@electric-sql/pglite'
import { openBenchStore } from '../lib/db'
import { openChatRig } from '../lib/rig'
import { runPool } from '../lib/pool'
import { summarize } from '../lib/stats'
import { randomBetween, randomInt, sleep } from '../lib/time'
import { printTopFunctions, profileThisProcess } from '../lib/profile'
import { chatThroughLog } from '../figures/chats'
import { timePgliteWasm } from '../lib/pglite-wasm'

const chats = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 500)
const profile = process.argv.includes('--profile')

interface Shape {
  n: number
  queued: number[]
  ran: number[]
}
const shapes = new Map<string, Shape>()
const label = new AsyncLocalStorage<string>()
let wasmMs = 0
let stepStatements = 0
let stepBatches = 0

const proto = PGlite.prototype as any
const shapeOf = (text: string) =>
  text
    .replace(/\s+/g, ' ')
    .replace(/\$\d+/g, '$')
    .replace(/\(select jsonb_array_elements_text.*?\)/, '(…)')
    .slice(0, 90)
for (const method of ['query', 'exec'] as const) {
  const original = proto[method]
  proto[method] = function (this: unknown, text: string, ...rest: unknown[]) {
    return label.run(shapeOf(String(text)), () => original.call(this, text, ...rest))
  }
}
/** Labels the statements drizzle sends, whichever way the store's client runs them (PGlite's `query` or its own prepared path). */
function labelDrizzleStatements(db: unknown): void {
  const session = (db as { session: { client: { query: (text: string, ...rest: unknown[]) => unknown } } }).session
  const client = session.client
  session.client = new Proxy(client, {
    get(target, property, receiver) {
      if (property !== 'query') return Reflect.get(target, property, receiver)
      return (text: string, ...rest: unknown[]) => {
        if (text.includes('a2_append_steps_many')) {
          stepStatements++
          stepBatches += (JSON.parse(String((rest[0] as unknown[])[0])) as unknown[]).length
        }
        return label.run(shapeOf(text), () => target.query(text, ...rest))
      }
    },
  })
}
const originalTransaction = proto.transaction
proto.transaction = function (this: unknown, fn: unknown) {
  const caller = (new Error().stack ?? '').split('\n').find((l) => l.includes('lib/a2/') && !l.includes('store.ts')) ?? ''
  return label.run(
    `transaction ${caller
      .trim()
      .replace(/^at /, '')
      .replace(/\(.*\/lib\//, '(lib/')}`,
    () => originalTransaction.call(this, fn),
  )
}
const originalExclusive = proto._runExclusiveTransaction
proto._runExclusiveTransaction = function (this: unknown, fn: () => Promise<unknown>) {
  const name = label.getStore() ?? '(unlabelled)'
  const asked = performance.now()
  return originalExclusive.call(this, async () => {
    const began = performance.now()
    try {
      return await fn()
    } finally {
      const shape = shapes.get(name) ?? { n: 0, queued: [], ran: [] }
      shape.n++
      shape.queued.push(began - asked)
      shape.ran.push(performance.now() - began)
      shapes.set(name, shape)
    }
  })
}
timePgliteWasm((ms) => (wasmMs += ms))

const store = await openBenchStore('pglite')
labelDrizzleStatements(store.db)
const rig = await openChatRig({ kind: 'pglite', store, tokenMs: 20 })
// The tail open as figure 6 times it: from asking for the SSE stream to its first bytes.
const opens: number[] = []
const originalTail = rig.chat.tail.bind(rig.chat)
rig.chat.tail = (async (...args: Parameters<typeof originalTail>) => {
  const t0 = performance.now()
  try {
    return await originalTail(...args)
  } finally {
    opens.push(performance.now() - t0)
  }
}) as typeof rig.chat.tail

// Where a tail's open goes before server.tail: the TCP accept and the request's headers.
let connections = 0
let requests = 0
rig.http.server.on('connection', () => connections++)
rig.http.server.on('request', (req) => {
  if (req.url?.startsWith('/a2/')) requests++
})
// Loop turns: a setImmediate callback runs once per turn, and Node accepts one connection per turn.
let turns = 0
let counting = true
const countTurn = () => {
  turns++
  if (counting) setImmediate(countTurn)
}
setImmediate(countTurn)
const profiler = profile ? await profileThisProcess() : undefined
shapes.clear()
wasmMs = 0
stepStatements = 0
stepBatches = 0
const started = performance.now()
const result = await runPool(chats, chats, async () => {
  await sleep(randomBetween(0, 1000))
  return chatThroughLog(rig, { tokens: 400, stopAfter: randomInt(3, 40), timeoutMs: 10_000 })
})
const wall = performance.now() - started
counting = false
const cpu = await rig.cpu()
if (profiler) {
  const file = await profiler.stop('bench/results/profiles/pglite-statements.cpuprofile')
  printTopFunctions(file, { packages: 12, functions: 20 })
}
const stops = summarize(result.results.map((o) => o.stopMs!))
const failed = result.errors.length
console.log(
  `${chats} chats: ${failed} failed (${result.errors[0] instanceof Error ? result.errors[0].message : ''}); wall ${(wall / 1000).toFixed(1)} s`,
)
console.log(`stop p50 ${stops.p50.toFixed(1)} p99 ${stops.p99.toFixed(1)} ms (n ${stops.n})`)
const o = summarize(opens)
console.log(`tail open (server.tail) p50 ${o.p50.toFixed(1)} p99 ${o.p99.toFixed(1)} max ${o.max.toFixed(0)} ms (n ${o.n})`)
console.log(`step batches per a2_append_steps_many: ${(stepBatches / Math.max(1, stepStatements)).toFixed(2)} (${stepStatements} statements)`)
console.log(
  `bench HTTP server: ${connections} connections accepted, ${requests} tail requests parsed; ${(turns / (wall / 1000)).toFixed(0)} loop turns/s`,
)
console.log(
  `this process ${cpu.parentPct.toFixed(0)}% of a core, loop delay p99 ${cpu.parentLag.p99.toFixed(0)} ms; WASM ${(wasmMs / 1000).toFixed(1)} s of ${(wall / 1000).toFixed(1)} s`,
)
const rows = [...shapes.entries()].sort((a, b) => b[1].ran.reduce((x, y) => x + y, 0) - a[1].ran.reduce((x, y) => x + y, 0))
console.log('statements by total time held (n, held total s, held p50/p99 ms, queued p50/p99 ms):')
for (const [name, s] of rows.slice(0, 25)) {
  const ran = summarize(s.ran)
  const queued = summarize(s.queued)
  const total = s.ran.reduce((x, y) => x + y, 0) / 1000
  console.log(
    `  ${String(s.n).padStart(6)} ${total.toFixed(2).padStart(6)} s  ${ran.p50.toFixed(1)}/${ran.p99.toFixed(1)}  q ${queued.p50.toFixed(0)}/${queued.p99.toFixed(0)}  ${name}`,
  )
}
await rig.close()
await store.close()
process.exit(0)
