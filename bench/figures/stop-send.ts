/**
 * Figure 9 — Stop from the browser's send: the client sends the Stop a browser sends (an
 * HTTP POST to the app's push route) and the time runs until the upstream model server sees
 * its request close. Every part is a process of its own, as deployed: this process is the
 * browsers (fetch for pushes, one SSE tail per chat), the app's API on `app-child.ts` (the
 * route handlers behind node:http: identity cookie, same-origin check, rate limits in the
 * database, admission, caps, append; the chats' SSE tails), the `generate` worker on
 * `worker-child.ts`, the upstream stand-in on `upstream-child.ts`. The send and the close
 * are read on the machine's shared clock (performance.timeOrigin + performance.now()).
 *
 * Each of `chats` loops at once: a new browser identity and chat, its SSE tail open, push
 * message + generate, wait for the first chunk on the tail and a random 0–60 ms more, Stop
 * (lastSeenIndex = the last index the tail delivered).
 *
 * Baseline, same run, same processes: a plain streamText call in this process against the
 * same upstream, aborted with a local AbortController at the same kind of point (abort() →
 * the upstream sees the close).
 *
 * `--ab=<checkout>`: a second app process runs from another checkout of the repo (its own
 * route and library code, the same database, worker and upstream), and the chats alternate
 * between the two apps, so both halves are measured under the same load at the same time.
 * On this shared 2-core machine the load moves the figure 2–5× between runs, which hid
 * differences of a third in alternated runs; alternated Stops within one run show them. The
 * other checkout must run against this one's schema (its migrations, if any, are applied
 * when its app opens the database, and the worker here sees them too).
 */
import { createOpenAI } from '@ai-sdk/openai'
import { streamText, type LanguageModel } from 'ai'
import { sql } from 'drizzle-orm'
import type { Store } from '@/lib/a2/server'
import { prompt } from '../lib/upstream'
import { openSse } from '../lib/http'
import { spawnChild, type Child } from '../lib/children'
import { postgresPids, rows } from '../lib/db'
import { cpuMeter, loopDelay, pidsCpu, processCpu } from '../lib/machine'
import { runPool, firstError } from '../lib/pool'
import { summarize, type Summary } from '../lib/stats'
import { randomBetween, sleep, until, wallNow, within } from '../lib/time'
import { WORKER_CONCURRENCY } from '../lib/rig'
import { sampleDatabase, type DbSample } from '../lib/db-sampler'
import { TRACE_HEADER, type RequestTrace } from '../lib/statement-trace'

type Lag = { p50: number; p99: number; max: number }
type ProcessSample = { pct: number; lag: Lag }

export interface StopSendFigure {
  /** Client's send → upstream closed. */
  ours: Summary
  /** Client's send → the route's answer received (201). */
  route: Summary
  /** Split at the Stop's `createdAt` (a2_push began; ms resolution): send → push began, push began → upstream closed. */
  split: { toPush: Summary; pushToClose: Summary }
  /** abort() → upstream closed. */
  baseline: Summary
  notClosedEarly: number
  chats: number
  /** CPU (% of one core) and event-loop delay (ms) of each process while `ours` ran. */
  cpu: {
    /** The whole machine, % of all cores (other work on it included), and every Postgres process together, % of one core. */
    machineBusyPct?: number
    postgresPct: number
    client: ProcessSample
    app?: ProcessSample
    worker?: ProcessSample
    upstream?: ProcessSample
  }
  /** The upstream process's clock against this one (NTP-style over IPC): the error bound of a sample. */
  clock: { offsetMs: number; rttMs: number }
  /** With --profile: what the database's backends were doing while `ours` ran. */
  db?: DbSample
  /** With --trace: each Stop's parts, from the app process's marks and its statements (ms). */
  trace?: Record<string, Summary>
  /** With --ab: the chats alternated between this checkout's app (`a`, also `ours` above) and another's (`b`). */
  ab?: { root: string; a: AbHalf; b: AbHalf; appB?: ProcessSample }
  errors?: string
}

export interface AbHalf {
  ours: Summary
  route: Summary
  toPush: Summary
  pushToClose: Summary
}

interface Closing {
  arrived: Promise<void>
  closed: Promise<{ at: number; early: boolean }>
}

/** What the upstream child reports per tag: its request arrived, its connection closed. */
function watchUpstream(upstream: Child) {
  const waiting = new Map<string, { arrived: () => void; closed: (value: { at: number; early: boolean }) => void }>()
  upstream.on((message: { type: string; tag: string; at?: number; early?: boolean }) => {
    const entry = waiting.get(message.tag)
    if (!entry) return
    if (message.type === 'request') entry.arrived()
    if (message.type === 'closed') {
      waiting.delete(message.tag)
      entry.closed({ at: message.at!, early: message.early! })
    }
  })
  return (tag: string): Closing => {
    let arrived!: () => void
    let closed!: (value: { at: number; early: boolean }) => void
    const result = {
      arrived: new Promise<void>((resolve) => (arrived = resolve)),
      closed: new Promise<{ at: number; early: boolean }>((resolve) => (closed = resolve)),
    }
    waiting.set(tag, { arrived, closed })
    return result
  }
}

let seq = 0

/** The browser's side, over HTTP: what the app's page sends (same-origin fetch, the identity cookie). */
function browser(appUrl: string) {
  const sameOrigin = { origin: appUrl, 'sec-fetch-site': 'same-origin' }
  return {
    async newChat(): Promise<{ cookie: string; sessionId: string }> {
      const identity = await fetch(`${appUrl}/api/sessions`, { headers: { 'sec-fetch-site': 'same-origin' } })
      const setCookie = identity.headers.get('set-cookie')
      await identity.arrayBuffer()
      if (!setCookie) throw new Error(`no identity was created: ${identity.status}`)
      const cookie = setCookie.split(';')[0]
      const created = await fetch(`${appUrl}/api/sessions`, {
        method: 'POST',
        headers: { ...sameOrigin, cookie, 'content-type': 'application/json' },
        body: '{}',
      })
      if (created.status !== 201) throw new Error(`creating a chat answered ${created.status}: ${await created.text()}`)
      const { session } = (await created.json()) as { session: { id: string } }
      return { cookie, sessionId: session.id }
    },
    push(sessionId: string, cookie: string, body: unknown, trace?: string): Promise<Response> {
      return fetch(`${appUrl}/api/sessions/${sessionId}/events`, {
        method: 'POST',
        headers: { ...sameOrigin, cookie, 'content-type': 'application/json', ...(trace ? { [TRACE_HEADER]: trace } : {}) },
        body: JSON.stringify(body),
      })
    },
  }
}

async function stopFromSend(app: ReturnType<typeof browser>, appUrl: string, watch: ReturnType<typeof watchUpstream>, pointMs: () => number) {
  const tag = `send${process.pid}x${++seq}`
  const { cookie, sessionId } = await app.newChat()
  let lastIndex = -1
  let sawChunk!: () => void
  const firstChunk = new Promise<void>((resolve) => (sawChunk = resolve))
  const tail = openSse(
    `${appUrl}/api/sessions/${sessionId}/events`,
    (event) => {
      if (event.id !== undefined) lastIndex = Math.max(lastIndex, Number(event.id))
      if (event.data?.type === 'chunk') sawChunk()
    },
    { headers: { cookie } },
  )
  try {
    await within(tail.opened, 10_000, 'SSE tail to open')
    const upstream = watch(tag)
    const started = await app.push(sessionId, cookie, {
      events: [
        { id: 'm', type: 'message', payload: { text: prompt(tag, 5_000) } },
        { id: 'g', type: 'generate', payload: { for: 'm' } },
      ],
    })
    if (started.status !== 201) throw new Error(`the push answered ${started.status}: ${await started.text()}`)
    await started.arrayBuffer()
    await within(firstChunk, 20_000, 'first chunk on the tail')
    await sleep(pointMs())
    const sent = wallNow()
    const stopped = await app.push(sessionId, cookie, { id: 'c', type: 'cancelled', payload: { of: 'g', lastSeenIndex: lastIndex } }, tag)
    const answered = wallNow()
    if (stopped.status !== 201) throw new Error(`the Stop answered ${stopped.status}: ${await stopped.text()}`)
    // The Stop's createdAt is the push statement's now(): when a2_push began, on the same clock.
    const { events } = (await stopped.json()) as { events: Array<{ createdAt: string }> }
    const began = Date.parse(events[0].createdAt)
    const closed = await within(upstream.closed, 15_000, 'upstream request to close after Stop')
    return {
      tag,
      sent,
      closedAt: closed.at,
      fromSent: closed.at - sent,
      routeMs: answered - sent,
      toPush: began - sent,
      pushToClose: closed.at - began,
      closedEarly: closed.early,
    }
  } finally {
    tail.close()
  }
}

/** A plain streamText call in this process, aborted locally: abort() → the upstream sees the close. */
async function stopLocally(model: LanguageModel, watch: ReturnType<typeof watchUpstream>, pointMs: () => number) {
  const tag = `direct${process.pid}x${++seq}`
  const upstream = watch(tag)
  const controller = new AbortController()
  let sawText!: () => void
  const firstText = new Promise<void>((resolve) => (sawText = resolve))
  const result = streamText({ model, messages: [{ role: 'user', content: prompt(tag, 5_000) }], abortSignal: controller.signal, maxRetries: 0 })
  const consuming = (async () => {
    try {
      for await (const part of result.stream) if (part.type === 'text-delta') sawText()
    } catch {
      // aborted
    }
  })()
  await within(firstText, 20_000, 'first token of the direct call')
  await sleep(pointMs())
  const sent = wallNow()
  controller.abort()
  const closed = await within(upstream.closed, 15_000, 'upstream request to close after abort')
  await consuming
  return { fromSent: closed.at - sent, closedEarly: closed.early }
}

export async function stopSendFigure(options: {
  store: Store
  databaseUrl: string
  tokenMs: number
  stops: number
  chats: number
  deadline: number
  profileDir?: string
  /** Trace each Stop's statements in the app process (off for the measured figure: it costs the app async hooks). */
  trace?: boolean
  /** Another checkout whose app takes every other chat (`--ab=<path>`). */
  abRoot?: string
}): Promise<StopSendFigure> {
  const prof = (name: string) => (options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.profileDir}/${name}`] : [])
  const children: Child[] = []
  try {
    const upstream = await spawnChild('upstream-child.ts', [], { env: { BENCH_TOKEN_MS: String(options.tokenMs) }, execArgv: prof('upstream-send') })
    children.push(upstream)
    const upstreamUrl = upstream.ready.url as string
    const worker = await spawnChild('worker-child.ts', ['chat'], {
      env: {
        BENCH_DB_URL: options.databaseUrl,
        BENCH_UPSTREAM_URL: upstreamUrl,
        BENCH_WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
        PGAPPNAME: 'a2-bench-worker',
      },
      execArgv: prof('worker-send'),
    })
    children.push(worker)
    const appChild = await spawnChild('app-child.ts', [], {
      env: { BENCH_DB_URL: options.databaseUrl, BENCH_UPSTREAM_URL: upstreamUrl, PGAPPNAME: 'a2-bench-app', BENCH_TRACE: options.trace ? '1' : '0' },
      execArgv: prof('app-send'),
    })
    children.push(appChild)
    const appUrl = appChild.ready.url as string
    const appChildB = options.abRoot
      ? await spawnChild('app-child.ts', [], {
          root: options.abRoot,
          env: { BENCH_DB_URL: options.databaseUrl, BENCH_UPSTREAM_URL: upstreamUrl, PGAPPNAME: 'a2-bench-app-b', BENCH_TRACE: '0' },
          execArgv: prof('app-send-b'),
        })
      : undefined
    if (appChildB) children.push(appChildB)
    const appUrlB = appChildB?.ready.url as string | undefined
    const watch = watchUpstream(upstream)
    const traces = new Map<string, RequestTrace>()
    appChild.on((message: { type: string; trace: RequestTrace }) => {
      if (message.type === 'trace') traces.set(message.trace.tag, message.trace)
    })
    const app = browser(appUrl)
    const appB = appUrlB ? browser(appUrlB) : undefined
    // --ab: the chats alternate between the two apps, a whole chat (tail, pushes, Stop) on one.
    let turn = 0
    const stopOnEither = async () => {
      const onB = appB !== undefined && turn++ % 2 === 1
      return { ...(await (onB ? stopFromSend(appB!, appUrlB!, watch, point) : stopFromSend(app, appUrl, watch, point))), onB }
    }
    const model = createOpenAI({ apiKey: 'bench', baseURL: upstreamUrl }).chat('bench')
    const settled = () =>
      until(
        async () => {
          const [row] = await rows<{ open: number }>(
            options.store,
            sql`select count(*)::int as open from a2_jobs where consumer = 'generate' and status in ('ACTIVE', 'CANCELLING')`,
          )
          return Number(row.open) === 0
        },
        20_000,
        'generate runs to settle',
        25,
      )
    const point = () => randomBetween(0, 60)

    // Warm-up (module loading, JIT, pools, keep-alive connections): not counted.
    await runPool(appB ? 8 : 4, 4, stopOnEither)
    await runPool(4, 4, () => stopLocally(model, watch, point))
    await settled()
    const clock = await upstream.clockOffset()

    const sample = () => Promise.all(children.map((child) => child.call<ProcessSample>({ cmd: 'cpu' }).catch(() => undefined)))
    await sample()
    const clientCpu = processCpu()
    const clientLag = loopDelay()
    const machineCpu = cpuMeter()
    const postgres = await pidsCpu(postgresPids(options.store))
    const sampler = options.profileDir ? sampleDatabase(options.databaseUrl) : undefined
    const both = await runPool(appB ? 2 * options.stops : options.stops, options.chats, stopOnEither, { deadline: options.deadline })
    const ours = { ...both, results: both.results.filter((s) => !s.onB) }
    const [upstreamCpu, workerCpu, appCpu, appCpuB] = await sample()
    const db = await sampler?.stop()
    const cpu = {
      machineBusyPct: machineCpu.stop()?.busyPct,
      postgresPct: await postgres.stop(),
      client: { pct: clientCpu.stop(), lag: clientLag.stop() },
      app: appCpu,
      worker: workerCpu,
      upstream: upstreamCpu,
    }
    await settled()
    const base = await runPool(options.stops, options.chats, () => stopLocally(model, watch, point), { deadline: options.deadline + 30_000 })
    return {
      ours: summarize(ours.results.map((s) => s.fromSent)),
      route: summarize(ours.results.map((s) => s.routeMs)),
      split: { toPush: summarize(ours.results.map((s) => s.toPush)), pushToClose: summarize(ours.results.map((s) => s.pushToClose)) },
      baseline: summarize(base.results.map((s) => s.fromSent)),
      notClosedEarly: ours.results.filter((s) => !s.closedEarly).length,
      chats: options.chats,
      cpu,
      clock,
      db,
      trace: options.trace ? traceParts(ours.results, traces) : undefined,
      ab: appB ? { root: options.abRoot!, a: half(ours.results), b: half(both.results.filter((s) => s.onB)), appB: appCpuB } : undefined,
      errors: firstError([...ours.errors, ...base.errors]),
    }
  } finally {
    for (const child of children.reverse()) await child.stop().catch(() => {})
  }
}

function half(stops: Array<{ fromSent: number; routeMs: number; toPush: number; pushToClose: number }>): AbHalf {
  return {
    ours: summarize(stops.map((s) => s.fromSent)),
    route: summarize(stops.map((s) => s.routeMs)),
    toPush: summarize(stops.map((s) => s.toPush)),
    pushToClose: summarize(stops.map((s) => s.pushToClose)),
  }
}

/** Each Stop's parts from its trace: the hop to the app, each statement, the gaps between them, the close. */
function traceParts(stops: Array<{ tag: string; sent: number; closedAt: number }>, traces: Map<string, RequestTrace>): Record<string, Summary> {
  const parts = new Map<string, number[]>()
  const add = (part: string, ms: number) => parts.set(part, [...(parts.get(part) ?? []), ms])
  for (const stop of stops) {
    const trace = traces.get(stop.tag)
    const of = (kind: string) => trace?.statements.find(([what]) => what === kind)
    const [read, limits, push] = [of('read'), of('limits'), of('a2_push')]
    if (!trace || !read || !push || trace.written === undefined) continue
    add('send → at the app', trace.arrived - stop.sent)
    add('at the app → first statement sent', trace.statements[0][1] - trace.arrived)
    if (limits) add('limits statement', limits[2] - limits[1])
    add('read statement', read[2] - read[1])
    add('read answered → a2_push sent', push[1] - read[2])
    add('a2_push statement', push[2] - push[1])
    add('a2_push answered → upstream closed', stop.closedAt - push[2])
    add('a2_push answered → response written', trace.written - push[2])
    for (const n of trace.inFlight) {
      add("statements in flight in the app as each of the Stop's was sent (count)", n)
      // Past the pool's 10 connections postgres-js queues a statement on a busy one: the mean is the share.
      add("Stop's statements sent with all 10 connections busy (mean = share)", n > 10 ? 1 : 0)
    }
  }
  return Object.fromEntries([...parts].map(([part, ms]) => [part, summarize(ms)]))
}
