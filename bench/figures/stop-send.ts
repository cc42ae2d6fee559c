/**
 * Figure 9 — Stop from the browser's send: the app's own push route (its handler as Next
 * runs it: identity cookie, same-origin check, rate limits in the database, the chat's
 * admission, the session's caps, the append) called with the Stop a browser sends, timed
 * from the call to the upstream model server seeing its request close; the run on the
 * worker process. 10 chats stream at once and each is stopped at a random point.
 *
 * Baseline: a plain streamText call in this process, aborted with a local AbortController
 * (figure 1's `stopDirect`).
 */
import { performance } from 'node:perf_hooks'
import type { ChatRig } from '../lib/rig'
import { prompt } from '../lib/upstream'
import { runPool, firstError } from '../lib/pool'
import { summarize, type Summary } from '../lib/stats'
import { randomBetween, sleep, until, within } from '../lib/time'
import { loadRoutes } from '@/test/routes'
import { stopDirect } from './stop'

export interface StopSendFigure {
  /** Route called → upstream closed. */
  ours: Summary
  /** How long the route took to answer the Stop. */
  route: Summary
  baseline: Summary
  notClosedEarly: number
  chats: number
  errors?: string
}

type Routes = Awaited<ReturnType<typeof loadRoutes>>

let seq = 0

async function stopThroughRoute(rig: ChatRig, routes: Routes, pointMs: () => number) {
  const tag = `send${process.pid}x${++seq}`
  const user = await routes.newUser()
  const started = await routes.push(
    user.sessionId,
    user.cookie,
    JSON.stringify({
      events: [
        { id: 'm', type: 'message', payload: { text: prompt(tag, 5_000) } },
        { id: 'g', type: 'generate', payload: { for: 'm' } },
      ],
    }),
  )
  if (started.status !== 201) throw new Error(`the push answered ${started.status}: ${await started.text()}`)
  const request = await rig.byTag.wait(tag, 20_000)
  await until(() => request.tokensSent >= 1, 20_000, 'first upstream token', 2)
  await sleep(pointMs())
  const called = performance.now()
  const stopped = await routes.push(
    user.sessionId,
    user.cookie,
    JSON.stringify({ id: 'c', type: 'cancelled', payload: { of: 'g', lastSeenIndex: 1 } }),
  )
  const answered = performance.now()
  if (stopped.status !== 201) throw new Error(`the Stop answered ${stopped.status}: ${await stopped.text()}`)
  await within(request.closed, 15_000, 'upstream request to close after Stop')
  return { fromCalled: request.closedAt! - called, routeMs: answered - called, closedEarly: request.closedEarly }
}

export async function stopSendFigure(
  rig: ChatRig,
  options: { databaseUrl: string; stops: number; chats: number; deadline: number },
): Promise<StopSendFigure> {
  // The routes' own chat server pushes into the rig's database; the rig's worker process runs the answers.
  const routes = await loadRoutes({
    databaseUrl: options.databaseUrl,
    env: { OPENAI_API_KEY: 'bench', OPENAI_BASE_URL: rig.upstream.url, OPENAI_MODEL: 'bench' },
  })
  const point = () => randomBetween(0, 60)
  await runPool(4, 4, () => stopThroughRoute(rig, routes, point)) // warm-up: route modules, pools, JIT
  await rig.settled()
  const ours = await runPool(options.stops, options.chats, () => stopThroughRoute(rig, routes, point), { deadline: options.deadline })
  await rig.settled()
  const base = await runPool(options.stops, options.chats, () => stopDirect(rig, point), { deadline: options.deadline + 30_000 })
  await routes.chatServer.shutdownChatServer()
  return {
    ours: summarize(ours.results.map((s) => s.fromCalled)),
    route: summarize(ours.results.map((s) => s.routeMs)),
    baseline: summarize(base.results.map((s) => s.fromAccepted)),
    notClosedEarly: ours.results.filter((s) => !s.closedEarly).length,
    chats: options.chats,
    errors: firstError([...ours.errors, ...base.errors]),
  }
}
