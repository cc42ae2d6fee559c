/**
 * Diagnostic (`npx tsx bench/diagnostics/abort-close-turns.ts`): in an otherwise idle process, how many
 * event-loop turns pass between aborting a streaming fetch and a node:http server in the same
 * process seeing it — its socket's `end` (the FIN read) and the response's `close` (what the
 * bench's stand-in upstream records as "closed"). Turns are counted by a setImmediate chain.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'

let turn = 0
let counting = true
const tick = () => {
  turn++
  if (counting) setImmediate(tick)
}
setImmediate(tick)

async function once(): Promise<{ end: number; close: number }> {
  let abortedAt = { turn: 0, ms: 0 }
  let socketEnd = 0
  let resolve!: (r: { end: number; close: number }) => void
  const done = new Promise<{ end: number; close: number }>((r) => (resolve = r))
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    const timer = setInterval(() => res.write('data: x\n\n'), 5)
    req.socket.once('end', () => (socketEnd = turn - abortedAt.turn))
    res.once('close', () => {
      clearInterval(timer)
      server.close()
      resolve({ end: socketEnd, close: turn - abortedAt.turn })
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const controller = new AbortController()
  const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, { signal: controller.signal })
  const reader = response.body!.getReader()
  for (let n = 0; ; n++) {
    const { done: ended } = await reader.read().catch(() => ({ done: true }))
    if (ended) break
    if (n === 5) {
      abortedAt = { turn, ms: performance.now() }
      controller.abort()
    }
  }
  return done
}

const results = []
for (let i = 0; i < 10; i++) results.push(await once())
counting = false
console.log(
  `turns after the abort, 10 trials: socket end ${results.map((r) => r.end).join(' ')}; response close ${results.map((r) => r.close).join(' ')}`,
)
