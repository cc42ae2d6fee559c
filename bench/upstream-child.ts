/**
 * The upstream model server on a process of its own (figure 9): the bench's stand-in
 * (lib/upstream.ts) with tagged answers. It tells the parent when a tagged request arrives
 * and when its connection closed, on the machine's shared clock (`wallNow`: timeOrigin +
 * now), so nothing the app or the client does in their processes delays the moment the
 * upstream sees the close.
 *
 * Env: BENCH_TOKEN_MS. Messages to the parent: `{ type: 'request', tag }`,
 * `{ type: 'closed', tag, at, early }`.
 */
import { performance } from 'node:perf_hooks'
import { startBenchUpstream, tagOf } from './lib/upstream'
import { serveParent, tellParent } from './lib/children'
import { loopDelay, processCpu } from './lib/machine'

const upstream = await startBenchUpstream(Number(process.env.BENCH_TOKEN_MS ?? 20))
// Every request, as it arrives: a waiter that never matches (the stand-in calls each waiter per request).
upstream
  .waitForRequest(
    (request) => {
      const tag = tagOf(request.body)?.tag
      if (!tag) return false
      tellParent({ type: 'request', tag })
      void request.closed.then(() => tellParent({ type: 'closed', tag, at: performance.timeOrigin + request.closedAt!, early: request.closedEarly }))
      return false
    },
    2 ** 31 - 1,
  )
  .catch(() => {})

let cpu = processCpu()
let delay = loopDelay()
serveParent(
  {
    cpu: () => {
      const sample = { pct: cpu.stop(), lag: delay.stop() }
      cpu = processCpu()
      delay = loopDelay()
      return sample
    },
  },
  () => upstream.close().catch(() => {}),
)
tellParent({ type: 'ready', pid: process.pid, url: upstream.url })
