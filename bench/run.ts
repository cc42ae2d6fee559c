/**
 * `npm run bench` — a2 chat's figures, each beside a baseline measured in the same run.
 *
 *   npm run bench                 Postgres: a fresh database from BENCH_DATABASE_URL ||
 *                                 TEST_DATABASE_URL || postgres://postgres@127.0.0.1:5432/test,
 *                                 dropped at the end; workers on another process.
 *   npm run bench -- --pglite     what fits one process, on an in-memory PGlite.
 *   npm run bench -- --only=1,4   some figures only (1 stop, 2 tokens, 3 append, 4 claim,
 *                                 5 memory, 6 scale, 7 takeover, 8 long sessions, 9 Stop
 *                                 from the browser's send, 10 Postgres restarts, 11 a tool
 *                                 call's request closed after Stop, 12 CPU per reasoning part;
 *                                 7, 9 and 10 are Postgres only; 10 starts a cluster of its own).
 *   npm run bench -- --only=14    the curve: 25–500 streams beside the direct route, Stop under
 *                                 each beside the same Stop with nothing streaming (~3 min; only when asked).
 *   npm run bench -- --only=16    beside vercel's resumable-stream on a redis-server of its own, at 100
 *                                 streams with the direct route (~2 min; only when asked; skipped,
 *                                 said so, without redis-server).
 *   npm run bench -- --takeovers=N  samples per part of figure 7 (default 20).
 *   npm run bench -- --only=13    the pages on a phone (Lighthouse, mobile) beside a bare Next.js
 *                                 page; needs a production build (`npx next build`) first;
 *                                 --lighthouse-rounds=N runs per page (default 3).
 *   npm run bench -- --only=15    attachments: a 10 MB upload beside a bare Node server's, and
 *                                 opening a chat of 20 photos beside the same chat without them
 *                                 (Postgres only).
 *   npm run bench -- --profile    also CPU-profile this process and the worker child
 *                                 (bench/results/profiles/) and print where the time went.
 *   npm run bench -- --trace      figure 9: each Stop's statements, timed in the app process.
 *   npm run bench -- --only=9 --ab=../other-checkout   figure 9 with every other chat on an app
 *                                 process run from another checkout (A/B under one load).
 *
 * Prints the machine, a table (figure | ours | baseline | ratio | target) and writes
 * bench/results/latest-<store>.json (postgres or pglite). Loopback only; bounded in count
 * and time (a watchdog ends the run at 570 s); child processes and the database are
 * cleaned up on every way out.
 */
import { existsSync, mkdirSync, writeFileSync, readdirSync, statSync, rmSync } from 'node:fs'
import path from 'node:path'
import type { Store } from '@/lib/a2/server'
import { machine, cpuMeter, processCpu, type Machine } from './lib/machine'
import { createBenchDb, openBenchStore, serverVersion, ADMIN_URL, type BenchDb } from './lib/db'
import { openChatRig, WORKER_CONCURRENCY, type ChatRig } from './lib/rig'
import { row, table, meets, type Row } from './lib/report'
import { fmt, summarize } from './lib/stats'
import { profileThisProcess, topFunctions, type ProfileSummary } from './lib/profile'
import { stopFigure, type StopFigure } from './figures/stop'
import { tokenFigure, type TokenLevel } from './figures/tokens'
import { curveFigure, curveNotes, curveRows, type CurveFigure } from './figures/curve'
import { anchorFigure, anchorNotes, anchorRows, type AnchorFigure } from './figures/anchor'
import { redisVersion, startRedis } from './lib/redis'
import { killChildren, spawnChild } from './lib/children'
import { scaleFigure, type ScaleLevel } from './figures/scale'
import { appendFigure, type AppendFigure } from './figures/append'
import { claimFigure, type ClaimFigure } from './figures/claim'
import { memoryFigure, type MemoryFigure } from './figures/memory'
import { takeoverFigure, type TakeoverFigure, type TakeoverPart } from './figures/takeover'
import { longSessionFigure, type LongSessionLevel } from './figures/long-sessions'
import { stopSendFigure, type AbHalf, type StopSendFigure } from './figures/stop-send'
import { restartFigure, type RestartFigure } from './figures/restart'
import { toolStopFigure, type ToolStopFigure } from './figures/tool-stop'
import { reasoningCpuFigure, type ReasoningCpuFigure } from './figures/reasoning-cpu'
import { lighthouseFigure, PAGE_LABELS, type LighthouseFigure, type PageName } from './figures/lighthouse'
import { uploadFigure, type UploadFigure } from './figures/uploads'

const args = process.argv.slice(2)
const kind: 'postgres' | 'pglite' = args.includes('--pglite') ? 'pglite' : 'postgres'
const onlyArg = args.find((a) => a.startsWith('--only='))
const only = onlyArg ? new Set(onlyArg.slice('--only='.length).split(',').map(Number)) : undefined
const wants = (figure: number) => !only || only.has(figure)
// Figure 14 (the curve, ~3 minutes) runs only when asked for: `--only=14`.
const wantsCurve = only?.has(14) ?? false
// Figure 16 (beside resumable-stream on Redis, ~2 minutes) too: `--only=16`.
const wantsAnchor = only?.has(16) ?? false
const profile = args.includes('--profile')
const trace = args.includes('--trace')
const abArg = args.find((a) => a.startsWith('--ab='))
const abRoot = abArg ? path.resolve(abArg.slice('--ab='.length)) : undefined
const takeoversArg = args.find((a) => a.startsWith('--takeovers='))
const takeovers = takeoversArg ? Number(takeoversArg.slice('--takeovers='.length)) : 20
const roundsArg = args.find((a) => a.startsWith('--lighthouse-rounds='))
const lighthouseRounds = roundsArg ? Number(roundsArg.slice('--lighthouse-rounds='.length)) : 3
// Figure 13's two `next start`s (the app, the bare page): BENCH_LIGHTHOUSE_PORT and the port after it.
const lighthousePort = Number(process.env.BENCH_LIGHTHOUSE_PORT || 3250)

const RESULTS = path.join(process.cwd(), 'bench', 'results')
const PROFILES = path.join(RESULTS, 'profiles')
// A full run is ~430 s (figures 1–10 354 s, 11 and 12 ~75 s, run ahead of 7 and 10, whose sampling
// stops 20 s before the watchdog): 570 s leaves them their samples on a loaded machine.
const BUDGET_MS = 570_000
// Figure 13: ~6 min of Lighthouse runs on this loaded machine (12 runs, the chats' seeding, two
// `next start`s), and the bare page's first build; it runs last, after every deadline above.
const LIGHTHOUSE_MS = wants(13) ? 900_000 : 0
const TOKEN_MS = 20 // 50 tokens/s per stream
const t0 = Date.now()
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(0)}s`
const say = (line: string) => process.stderr.write(`[bench ${elapsed()}] ${line}\n`)

interface Results {
  store: 'postgres' | 'pglite'
  startedAt: string
  durationS?: number
  machine: Machine
  settings: Record<string, unknown>
  rows: Row[]
  figures: {
    stop?: StopFigure
    tokens?: TokenLevel[]
    curve?: CurveFigure
    anchor?: AnchorFigure | { skipped: string }
    scale?: ScaleLevel[]
    append?: AppendFigure[]
    claim?: ClaimFigure
    memory?: MemoryFigure
    takeover?: TakeoverFigure
    longSessions?: LongSessionLevel[]
    stopSend?: StopSendFigure
    restart?: RestartFigure
    toolStop?: ToolStopFigure
    reasoningCpu?: ReasoningCpuFigure
    lighthouse?: LighthouseFigure
    uploads?: UploadFigure
  }
  /** Machine CPU busy % and per-process CPU % (100 = one core) while each phase ran. */
  cpu: Record<string, unknown>
  profiles?: Record<string, ProfileSummary>
  errors: string[]
}

let db: BenchDb | undefined
let current: Results | undefined
let store: Store | undefined
let rig: ChatRig | undefined
let cleaning: Promise<void> | undefined

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    killChildren()
    await rig?.close().catch(() => {})
    await store?.close().catch(() => {})
    await db?.drop().catch((error) => say(`could not drop ${db?.name}: ${error}`))
  })()
  return cleaning
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    say(`${signal}: cleaning up`)
    void cleanup().finally(() => process.exit(130))
  })
}
const watchdog = setTimeout(() => {
  say(`over the ${(BUDGET_MS + LIGHTHOUSE_MS) / 1000} s budget: stopping with what was measured`)
  if (current) {
    current.errors.push(`stopped by the ${(BUDGET_MS + LIGHTHOUSE_MS) / 1000} s watchdog`)
    report(current)
  }
  void cleanup().finally(() => process.exit(2))
}, BUDGET_MS + LIGHTHOUSE_MS)
watchdog.unref()

async function main(): Promise<number> {
  const database = kind === 'postgres' ? await serverVersion(ADMIN_URL) : 'PGlite (in memory, one connection)'
  const results: Results = {
    store: kind,
    startedAt: new Date().toISOString(),
    machine: machine(database),
    settings: { tokenMs: TOKEN_MS, workerConcurrency: WORKER_CONCURRENCY, only: only ? [...only] : 'all', takeovers, lighthouseRounds },
    rows: [],
    figures: {},
    cpu: {},
    errors: [],
  }
  current = results
  const m = results.machine
  console.log(`a2 chat bench — ${kind}`)
  console.log(`machine: ${m.cores} cores, ${m.cpuModel}, ${m.memoryGiB} GiB, node ${m.node}, ${m.platform}`)
  console.log(`database: ${m.database}; load average at start ${m.loadAverage.join(' ')}`)

  if (kind === 'postgres') {
    db = await createBenchDb()
    say(`database ${db.name} created`)
    store = await openBenchStore('postgres', db.url, { app: 'a2-bench-parent' })
  } else {
    store = await openBenchStore('pglite')
  }

  const phase = async <T>(name: string, run: () => Promise<T>): Promise<T | undefined> => {
    say(`${name}…`)
    const machineCpu = cpuMeter()
    const parentCpu = processCpu()
    try {
      return await run()
    } catch (error) {
      const message = `${name}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`
      results.errors.push(message)
      say(`FAILED ${message}`)
      return undefined
    } finally {
      results.cpu[name] = { machineBusyPct: machineCpu.stop()?.busyPct, parentPct: parentCpu.stop() }
      say(`${name} done`)
    }
  }

  // Figures 1, 2, 6, 8, 12: the chat rig (upstream + HTTP here, the generate worker on another process).
  if (wants(1) || wants(2) || wants(6) || wants(8) || wants(12) || wantsCurve || wantsAnchor) {
    if (profile) rmSync(PROFILES, { recursive: true, force: true })
    const parentProfile = profile ? await profileThisProcess() : undefined
    rig = await openChatRig({ kind, store, dbUrl: db?.url, tokenMs: TOKEN_MS, profileDir: profile ? PROFILES : undefined, sampleDb: profile })
    if (wants(1)) {
      results.figures.stop = await phase('1 stop latency', () => stopFigure(rig!, { stops: 200, concurrency: 5, deadline: Date.now() + 45_000 }))
    }
    if (wants(2)) {
      results.figures.tokens = await phase('2 token overhead', () =>
        tokenFigure(
          rig!,
          [
            { streams: 1, tokens: 150, rounds: 1 },
            { streams: 100, tokens: 50, rounds: 1 },
          ],
          Date.now() + 45_000,
          kind === 'postgres' ? 30_000 : 15_000,
        ),
      )
    }
    if (wantsCurve) {
      results.figures.curve = await phase('14 the curve', () =>
        curveFigure(rig!, { levels: [25, 50, 100, 200, 500], tokens: 100, idleStops: 20, deadline: Date.now() + 300_000, timeoutMs: 60_000 }),
      )
    }
    if (wantsAnchor) {
      const version = redisVersion()
      if (!version) {
        results.figures.anchor = { skipped: 'no redis-server on this machine (Debian: apt-get install redis-server)' }
        say(`16 skipped: ${results.figures.anchor.skipped}`)
      } else
        results.figures.anchor = await phase('16 beside resumable-stream on Redis', async () => {
          const redis = await startRedis()
          const child = await spawnChild('anchor-child.ts', [], { env: { BENCH_UPSTREAM_URL: rig!.upstream.url, REDIS_URL: redis.url } }).catch(
            async (error) => (await redis.stop(), Promise.reject(error)),
          )
          try {
            return await anchorFigure(
              rig!,
              { child, redisPid: redis.pid, redis: version },
              { streams: 100, tokens: 100, rounds: 3, deadline: Date.now() + 150_000, timeoutMs: 60_000 },
            )
          } finally {
            await child.stop()
            await redis.stop()
          }
        })
    }
    if (wants(12)) {
      results.figures.reasoningCpu = await phase('12 CPU per part, reasoning vs text', () =>
        reasoningCpuFigure(rig!, {
          streams: 50,
          parts: 50,
          pairs: 3,
          deadline: Date.now() + 45_000,
          timeoutMs: kind === 'postgres' ? 30_000 : 15_000,
        }),
      )
    }
    if (wants(6)) {
      results.figures.scale = await phase('6 scale', () =>
        scaleFigure(
          rig!,
          [
            { chats: 10, rounds: 6 },
            { chats: 100, rounds: 1 },
            { chats: 500, rounds: 1 },
          ],
          Date.now() + 90_000,
          kind === 'postgres' ? 15_000 : 10_000,
        ),
      )
    }
    if (wants(8)) {
      results.figures.longSessions = await phase('8 long sessions', () =>
        longSessionFigure(rig!, {
          levels: [
            { label: '1k events', answers: 45 },
            { label: '10k events', answers: 455 },
            { label: '50k events', answers: 2_273 },
            { label: '100k events', answers: 4_545 },
            { label: '50k user messages', answers: 50_000, messagesOnly: true },
          ],
          // 40 opens of each chat a level: the median of 5 moved by 1.5x between runs of the same code.
          opens: 40,
          opensNoState: 15,
          rounds: 5,
          deadline: Date.now() + 200_000,
        }),
      )
    }
    const closing = rig
    rig = undefined
    await closing.close()
    if (parentProfile) {
      const file = await parentProfile.stop(path.join(PROFILES, 'parent-chat.cpuprofile'))
      results.profiles = { ...results.profiles, parent: topFunctions(file) }
      // --cpu-prof writes one file per thread (tsx's loader has its own): the main thread's is the largest.
      // On PGlite the worker runs in this process: there is no child profile.
      const dir = path.join(PROFILES, 'worker-chat')
      const files = existsSync(dir) ? readdirSync(dir).map((f) => path.join(dir, f)) : []
      const main = files.sort((a, b) => statSync(b).size - statSync(a).size)[0]
      if (main) results.profiles.workerChild = topFunctions(main)
    }
  }

  // Figure 11: a rig of its own with the webhook tool configured (the other figures' answers are sent no sendWebhook).
  if (wants(11)) {
    rig = await openChatRig({ kind, store, dbUrl: db?.url, tokenMs: TOKEN_MS, webhook: true, mcp: true })
    results.figures.toolStop = await phase("11 a tool call's request closed after Stop", () =>
      toolStopFigure(rig!, { stops: 100, concurrency: 5, deadline: Date.now() + 60_000 }),
    )
    const closing = rig
    rig = undefined
    await closing.close()
  }

  // Figure 9: browser, app, worker and upstream each on a process of their own (Postgres: the
  // app and the worker share the database), after the rig is closed so its worker claims nothing.
  if (wants(9) && kind === 'postgres') {
    results.figures.stopSend = await phase("9 Stop from the browser's send", () =>
      stopSendFigure({
        store: store!,
        databaseUrl: db!.url,
        tokenMs: TOKEN_MS,
        stops: 100,
        chats: 10,
        // --ab runs twice the Stops (half on each app).
        deadline: Date.now() + (abRoot ? 90_000 : 45_000),
        profileDir: profile ? PROFILES : undefined,
        trace,
        abRoot,
      }),
    )
  }

  if (wants(3)) {
    results.figures.append = []
    const onMain = await phase(`3 append throughput (${kind})`, () => appendFigure(store!, { windowMs: 1_500, trials: 3 }))
    if (onMain) results.figures.append.push(onMain)
    if (kind === 'postgres') {
      const lite = await openBenchStore('pglite')
      try {
        const onLite = await phase('3 append throughput (pglite)', () => appendFigure(lite, { windowMs: 1_500, trials: 3 }))
        if (onLite) results.figures.append.push(onLite)
      } finally {
        await lite.close()
      }
    }
  }

  if (wants(4)) {
    results.figures.claim = await phase('4 claim throughput and wake-up', () =>
      claimFigure(store!, {
        jobs: kind === 'postgres' ? 1_500 : 600,
        runs: 3,
        stuckLanes: 10_000,
        wakeSamples: 200,
        dbUrl: kind === 'postgres' ? db!.url : undefined,
      }),
    )
  }

  if (wants(5)) {
    results.figures.memory = await phase('5 memory per SSE stream', () =>
      memoryFigure({ connections: 1_000, dbUrl: kind === 'postgres' ? db!.url : undefined, store: kind === 'postgres' ? store : undefined }),
    )
  }

  // Figure 7: worker processes that die or shut down (Postgres: PGlite is one process's database).
  if (wants(7) && kind === 'postgres') {
    results.figures.takeover = await phase('7 takeover after kill -9 / SIGTERM', () =>
      takeoverFigure(store!, {
        dbUrl: db!.url,
        kills: takeovers,
        terms: takeovers,
        tokenMs: TOKEN_MS,
        // ~4 s a sample on this machine; stop in time for the report before the watchdog.
        deadline: Math.min(Date.now() + 240_000, t0 + BUDGET_MS - 20_000),
        say,
      }),
    )
    for (const part of [results.figures.takeover?.kill, results.figures.takeover?.term]) {
      for (const error of part?.errors ?? []) results.errors.push(`7 ${part!.signal}: ${error}`)
    }
  }

  // Figure 10: Postgres restarts under answers in flight, on a cluster of its own (the shared one is left alone).
  if (wants(10) && kind === 'postgres') {
    results.figures.restart = await phase('10 Postgres restarts', () =>
      restartFigure({ restarts: 5, answers: 10, tokenMs: TOKEN_MS, deadline: Math.min(Date.now() + 120_000, t0 + BUDGET_MS - 20_000), say }),
    )
    const r = results.figures.restart
    for (const part of [r?.fast, r?.immediate]) for (const error of part?.errors ?? []) results.errors.push(`10 ${part!.mode}: ${error}`)
    if (r && (r.attemptsSpent || r.failed)) results.errors.push(`10: ${r.attemptsSpent} runs spent an attempt, ${r.failed} FAILED`)
  }

  // Figure 13: the pages in a phone's browser, on servers of their own (the app on a PGlite of its own);
  // last, so its time is its own (LIGHTHOUSE_MS more on the watchdog).
  if (wants(13)) {
    results.figures.lighthouse = await phase('13 the pages on a phone (Lighthouse)', () =>
      lighthouseFigure({ rounds: lighthouseRounds, appPort: lighthousePort, barePort: lighthousePort + 1, say }),
    )
    if (results.figures.lighthouse?.errors) results.errors.push(`13: ${results.figures.lighthouse.errors}`)
  }

  if (wants(15) && kind === 'postgres') {
    results.figures.uploads = await phase('15 attachments', () => uploadFigure({ databaseUrl: db!.url, rounds: 7, say }))
  }

  report(results)
  return results.errors.length ? 1 : 0
}

/** Writes the JSON and prints the table and notes (also for a partial run). */
function report(results: Results): void {
  results.rows = rowsOf(results)
  results.durationS = Math.round((Date.now() - t0) / 1000)
  mkdirSync(RESULTS, { recursive: true })
  const json = JSON.stringify(results, null, 2)
  writeFileSync(path.join(RESULTS, `latest-${results.store}.json`), json)

  console.log('')
  console.log(table(results.rows))
  console.log('')
  for (const note of notesOf(results)) console.log(note)
  if (results.profiles) printProfiles(results.profiles)
  for (const error of results.errors) console.log(`ERROR ${error.split('\n')[0]}`)
  console.log(`\nwrote bench/results/latest-${results.store}.json (${results.durationS} s)`)
}

function rowsOf(r: Results): Row[] {
  const out: Row[] = []
  const f = r.figures
  const where = r.store === 'postgres' ? 'worker on another process' : 'worker in this process'
  if (f.stop) {
    out.push(
      row('1 stop latency p50', 'ms', f.stop.ours.p50, f.stop.baseline.p50, {
        target: { op: '<=', value: 10 },
        note: `${f.stop.ours.n} stops, ${f.stop.concurrency} at once, ${where}`,
      }),
    )
    out.push(row('1 stop latency p99', 'ms', f.stop.ours.p99, f.stop.baseline.p99, { target: { op: '<=', value: 50 } }))
  }
  if (f.toolStop) {
    const t = f.toolStop
    // The issue's target: the tool's request closes within 2× of the model's request (figure 1's measurement, same pool).
    const model = { baselineLabel: '(model request)' }
    out.push(
      row("11 Stop mid-tool-call, accepted → tool's request closed p50", 'ms', t.ours.p50, t.baseline.p50, {
        ...model,
        target: { op: '<=', value: 2 * t.baseline.p50 },
        note: `${t.ours.n} tool-call stops beside ${t.baseline.n} model-request stops, ${t.concurrency} at once, ${where}`,
      }),
    )
    out.push(
      row("11 Stop mid-tool-call, accepted → tool's request closed p99", 'ms', t.ours.p99, t.baseline.p99, {
        ...model,
        target: { op: '<=', value: 2 * t.baseline.p99 },
      }),
    )
    if (t.approval)
      for (const p of ['p50', 'p99'] as const)
        out.push(
          row(`11 approval pushed → the MCP server has the call ${p}`, 'ms', t.approval[p], t.baseline[p], {
            baselineLabel: '(a Stop: model request closed)',
            ...(p === 'p50' ? { note: `${t.approval.n} approvals` } : {}),
          }),
        )
    // The MCP rows: the server has the cancellation within 2× of the model's request closing (issue 36's target).
    for (const transport of ['http', 'stdio'] as const) {
      const m = t.mcp?.[transport]
      if (!m) continue
      const has = transport === 'http' ? 'its response stream closed' : 'notifications/cancelled received'
      for (const p of ['p50', 'p99'] as const)
        out.push(
          row(`11 Stop mid-MCP-call over ${transport}, accepted → ${has} ${p}`, 'ms', m[p], t.baseline[p], {
            ...model,
            target: { op: '<=', value: 2 * t.baseline[p] },
            ...(p === 'p50' ? { note: `${m.n} stops` } : {}),
          }),
        )
    }
  }
  if (f.reasoningCpu) {
    const c = f.reasoningCpu
    out.push(
      row(`12 CPU per part, reasoning vs text answer @${c.streams} streams`, 'µs', c.cpuPerPart.reasoning, c.cpuPerPart.text, {
        baselineLabel: '(text)',
        note: `${c.pairs.length} alternated pairs of ${c.streams} × ${c.partsPerStream} parts`,
      }),
    )
    // The issue's target: reasoning ≤ 1.25× text, on the median of the pairs' ratios (each pair under one load).
    out.push(row('12 CPU per part, reasoning / text, median of pairs', 'ratio', c.ratio, undefined, { target: { op: '<=', value: 1.25 } }))
  }
  if (f.lighthouse) out.push(...lighthouseRows(f.lighthouse))
  if (f.uploads) out.push(...uploadRows(f.uploads))
  const failed = (x: { failed: { ours: number; baseline: number } }, of: number) =>
    x.failed.ours || x.failed.baseline ? ` [failed: ours ${x.failed.ours}/${of}, baseline ${x.failed.baseline}/${of}]` : ''
  for (const level of f.tokens ?? []) {
    const s = `@${level.streams} stream${level.streams > 1 ? 's' : ''}${failed(level, level.streams)}`
    out.push(row(`2 token latency p50 ${s}`, 'ms', level.ours.p50, level.baseline.p50, { note: `${level.ours.n} tokens` }))
    out.push(row(`2 token latency p99 ${s}`, 'ms', level.ours.p99, level.baseline.p99))
    // The issue's targets are on what the log adds: ≤ 5 ms at p50, ≤ 25 ms at p99.
    out.push(row(`2 token overhead p50 ${s}`, 'ms added', level.ours.p50 - level.baseline.p50, undefined, { target: { op: '<=', value: 5 } }))
    out.push(row(`2 token overhead p99 ${s}`, 'ms added', level.ours.p99 - level.baseline.p99, undefined, { target: { op: '<=', value: 25 } }))
    // All processes' CPU per token received; the target (1.3× the direct route) is the issue's, at 100 streams.
    out.push(
      row(`2 CPU per token, all processes ${s}`, 'µs', level.cpuPerToken.ours, level.cpuPerToken.baseline, {
        ...(level.streams >= 100 ? { target: { op: '<=' as const, value: 1.3 * level.cpuPerToken.baseline } } : {}),
      }),
    )
  }
  if (f.curve) out.push(...curveRows(f.curve))
  if (f.anchor) out.push(...anchorRows(f.anchor))
  for (const a of f.append ?? []) {
    out.push(row(`3 append throughput, ${a.store}`, 'events/s', a.ours.median, a.baseline.median, { note: `median of ${a.ours.trials.length}` }))
    // Target: at least half the raw rate, on Postgres (PGlite is reported, not held to it).
    if (a.store === 'postgres')
      out.push(
        row('3 append, share of the raw rate, postgres', 'ratio', a.ours.median / a.baseline.median, undefined, { target: { op: '>=', value: 0.5 } }),
      )
  }
  if (f.claim) {
    const c = f.claim
    out.push(row('4 claim, no lanes', 'jobs/s', c.noLanes.median, c.baseline.median))
    out.push(row(`4 claim, ${c.stuckLaneCount / 1000}k stuck lanes`, 'jobs/s', c.stuckLanes.median, c.baseline.median))
    out.push(row(`4 wake append→start p50 (${c.wake.where})`, 'ms', c.wake.ours.p50, c.wake.baseline?.p50))
    out.push(row(`4 wake append→start p99 (${c.wake.where})`, 'ms', c.wake.ours.p99, c.wake.baseline?.p99))
    out.push(row(`4 wake p50, ${c.stuckLaneCount / 1000}k stuck lanes`, 'ms', c.wakeStuck.ours.p50, c.wake.baseline?.p50))
    out.push(row(`4 wake p99, ${c.stuckLaneCount / 1000}k stuck lanes`, 'ms', c.wakeStuck.ours.p99, c.wake.baseline?.p99))
  }
  if (f.memory) {
    const { ours, baseline } = f.memory
    out.push(
      row('5 memory per idle SSE stream, RSS', 'KiB', ours.perConnection.rssKiB, baseline.perConnection.rssKiB, { target: { op: '<=', value: 50 } }),
    )
    out.push(row('5 memory per idle SSE stream, heap', 'KiB', ours.perConnection.heapKiB, baseline.perConnection.heapKiB))
    out.push(row('5 statements/s sent, 1,000 idle streams', 'stmt/s', ours.idleStatementsPerSec, baseline.idleStatementsPerSec))
    out.push(row('5 server CPU, 1,000 idle streams', '% core', ours.idleCpuPct, baseline.idleCpuPct))
  }
  for (const level of f.scale ?? []) {
    const at = `@${level.chats} chats${failed(level, level.chats * level.rounds)}`
    out.push(row(`6 stop p50 ${at}`, 'ms', level.stop.ours.p50, level.stop.baseline.p50))
    out.push(row(`6 stop p99 ${at}`, 'ms', level.stop.ours.p99, level.stop.baseline.p99))
    out.push(row(`6 token p50 ${at}`, 'ms', level.token.ours.p50, level.token.baseline.p50))
    out.push(row(`6 token p99 ${at}`, 'ms', level.token.ours.p99, level.token.baseline.p99))
  }
  if (f.stopSend) {
    const s = f.stopSend
    const local = { baselineLabel: '(local abort)' }
    out.push(
      row('9 Stop, client send → upstream closed p50', 'ms', s.ours.p50, s.baseline.p50, {
        ...local,
        target: { op: '<=', value: 5 },
        note: `${s.ours.n} stops, ${s.chats} chats at once; the route's answer at the client p50 ${fmt(s.route.p50)} ms`,
      }),
    )
    out.push(row('9 Stop, client send → upstream closed p99', 'ms', s.ours.p99, s.baseline.p99, { ...local, target: { op: '<=', value: 15 } }))
  }
  for (const level of f.longSessions ?? []) {
    const fresh = { baselineLabel: '(fresh session)' }
    const lag = level.cpu.workerLag ?? level.cpu.parentLag
    out.push(
      row(`8 first screen from a client p50 @${level.label}`, 'ms', level.open.ours.p50, level.open.baseline.p50, {
        ...fresh,
        target: { op: '<=', value: level.open.baseline.p50 * 1.5 },
        note: `${level.open.ours.n} opens of each, alternated; p99 ${fmt(level.open.ours.p99)} vs ${fmt(level.open.baseline.p99)} ms; first open (no checkpoint) ${Math.round(level.coldOpenMs)} ms`,
      }),
    )
    out.push(
      row(`8 first screen bytes @${level.label}`, 'KiB', level.snapshotBytes / 1024, level.baselineBytes / 1024, {
        ...fresh,
        target: { op: '<=', value: 256 },
      }),
    )
    out.push(
      row(`8 server heap one open takes @${level.label}`, 'KiB', level.heldKiB.ours, level.heldKiB.baseline, {
        ...fresh,
        target: { op: '<=', value: level.heldKiB.baseline * 2 },
      }),
    )
    out.push(
      row(`8 first screen, no state in memory p50 @${level.label}`, 'ms', level.openNoState.ours.p50, level.openNoState.baseline.p50, {
        ...fresh,
        note: `${level.openNoState.ours.n} opens of each, alternated, each in a process holding no folded state (the checkpoint read whole)`,
      }),
    )
    out.push(
      row(`8 server heap one open takes, no state in memory @${level.label}`, 'KiB', level.heldNoStateKiB.ours, level.heldNoStateKiB.baseline, fresh),
    )
    out.push(
      row(`8 first token p50 @${level.label}`, 'ms', level.firstToken.ours.p50, level.firstToken.baseline.p50, {
        ...fresh,
        note: `${level.firstToken.ours.n} answers`,
      }),
    )
    out.push(row(`8 worker loop delay p99 @${level.label}`, 'ms', lag.p99))
  }
  if (f.takeover) {
    const t = f.takeover
    const lease = { baselineLabel: '(lease)' }
    if (t.kill) {
      out.push(
        row('7 takeover after kill -9, first chunk of next attempt p50', 'ms', t.kill.reader.p50, t.leaseMs, {
          ...lease,
          target: { op: '<=', value: 1_000 },
          note: `${t.kill.reader.n} kills`,
        }),
      )
      out.push(
        row('7 takeover after kill -9, first chunk of next attempt p99', 'ms', t.kill.reader.p99, t.leaseMs, {
          ...lease,
          target: { op: '<=', value: 2_000 },
        }),
      )
    }
    if (t.term) {
      out.push(row('7 answer continues after SIGTERM p50', 'ms', t.term.reader.p50, t.leaseMs, { ...lease, note: `${t.term.reader.n} SIGTERMs` }))
      out.push(row('7 answer continues after SIGTERM p99', 'ms', t.term.reader.p99, t.leaseMs, { ...lease, target: { op: '<=', value: 1_000 } }))
    }
  }
  if (f.restart) {
    const lease = { baselineLabel: '(lease)' }
    for (const part of [f.restart.fast, f.restart.immediate]) {
      if (!part) continue
      const how = part.mode === 'fast' ? 'fast restart' : 'immediate stop + start 3 s later'
      out.push(
        row(`10 store back → next chunk, ${how} p50`, 'ms', part.back.p50, f.restart.leaseMs, {
          ...lease,
          target: { op: '<=', value: 1_000 },
          note: `${part.back.n} answers over ${part.restarts} restarts, down p50 ${fmt(part.down.p50)} ms`,
        }),
      )
      out.push(
        row(`10 store back → next chunk, ${how} p99`, 'ms', part.back.p99, f.restart.leaseMs, { ...lease, target: { op: '<=', value: 1_000 } }),
      )
    }
  }
  return out
}

function notesOf(r: Results): string[] {
  const notes: string[] = []
  const f = r.figures
  if (f.stop) {
    const s = f.stop
    notes.push(
      `1: ${s.ours.n} stops (${s.concurrency} at once), worker ${r.store === 'postgres' ? 'on another process' : 'in this process'}; ` +
        `from push called: p50 ${fmt(s.oursFromCalled.p50)} / p99 ${fmt(s.oursFromCalled.p99)} ms (the cancel push itself p50 ${fmt(s.cancelPush.p50)} ms); ` +
        `runs ended CANCELLED ${s.runsCancelled.cancelled}/${s.runsCancelled.total}; upstream not closed early: ${s.notClosedEarly}` +
        (s.errors ? `; ${s.errors}` : ''),
    )
    notes.push(`   CPU ${cpuText(s.cpu)}`)
    if (s.cpu.db) notes.push(...dbText(s.cpu.db))
    notes.push('   baseline: streamText + AbortController on the same upstream, abort() → upstream closedAt.')
  }
  if (f.toolStop) {
    const t = f.toolStop
    notes.push(
      `11: ${t.ours.n} Stops while the sendWebhook tool's POST was held open by the receiver, alternated with ${t.baseline.n} of figure 1's (the model's request); ` +
        `from push called: p50 ${fmt(t.oursFromCalled.p50)} / p99 ${fmt(t.oursFromCalled.p99)} ms; ` +
        `runs ended CANCELLED ${t.runsCancelled.cancelled}/${t.runsCancelled.total}; tool calls' last state: ` +
        `${Object.entries(t.toolStates)
          .map(([state, n]) => `${state} ${n}`)
          .join(', ')}` +
        (t.errors ? `; ${t.errors}` : ''),
    )
    notes.push(`   CPU ${cpuText(t.cpu)}`)
    notes.push("   baseline: figure 1's measurement in the same pool, Stop accepted → the upstream saw the model's request close.")
  }
  if (f.reasoningCpu) {
    const c = f.reasoningCpu
    notes.push(
      `12: ${c.pairs.length} pairs (text, then reasoning) of ${c.streams} streams × ${c.partsPerStream} parts; CPU µs per part, text / reasoning: ` +
        `${c.pairs.map((p) => `${fmt(p.text)} / ${fmt(p.reasoning)}`).join('; ')}; part latency p50 text ${fmt(c.latency.text.p50)} / reasoning ${fmt(c.latency.reasoning.p50)} ms ` +
        `(${c.latency.text.n} / ${c.latency.reasoning.n} parts); lost text ${c.lost.text}, reasoning ${c.lost.reasoning}` +
        (c.errors ? `; ${c.errors}` : ''),
    )
    notes.push(`   CPU (last pair) text ${cpuText(c.cpu.text)}; reasoning ${cpuText(c.cpu.reasoning)}`)
  }
  for (const level of f.tokens ?? []) {
    notes.push(
      `2 @${level.streams}: ${level.ours.n} tokens through the log (${level.tokensPerStream}/stream, 50 tokens/s), ${level.baseline.n} direct; ` +
        `overhead p50 ${fmt(level.ours.p50 - level.baseline.p50)} ms; lost tokens ours ${level.lost.ours}, baseline ${level.lost.baseline}; ` +
        `CPU ours ${cpuText(level.cpu.ours)}, baseline ${cpuText(level.cpu.baseline)}` +
        (level.errors ? `; ${level.errors}` : ''),
    )
    notes.push(`   ${splitText(level)}`)
    if (level.cpu.ours.db) notes.push(...dbText(level.cpu.ours.db))
  }
  if (f.tokens?.length) notes.push('   baseline: an HTTP route piping streamText text deltas straight to the client as SSE.')
  if (f.curve) notes.push(...curveNotes(f.curve))
  if (f.anchor) notes.push(...anchorNotes(f.anchor, cpuText))
  for (const a of f.append ?? []) {
    notes.push(
      `3 ${a.store}: ${a.sessions} sessions, ${a.windowMs} ms windows, trials ours ${a.ours.trials.map((x) => fmt(x)).join(' / ')}, ` +
        `baseline ${a.baseline.trials.map((x) => fmt(x)).join(' / ')}; mean batch ours ${fmt(a.batch.ours)}, baseline ${fmt(a.batch.baseline)} events/transaction`,
    )
  }
  if (f.append?.length)
    notes.push("   baseline: the same chunkWriter over raw multi-row INSERTs into a table with a2_events' columns, indexes and FK.")
  if (f.claim) {
    const c = f.claim
    notes.push(
      `4: ${c.jobs} no-op jobs per trial, median of ${c.noLanes.trials.length}: no lanes ${c.noLanes.trials.map((x) => fmt(x)).join(' / ')}, ` +
        `stuck lanes ${c.stuckLanes.trials.map((x) => fmt(x)).join(' / ')}, bare loop ${c.baseline.trials.map((x) => fmt(x)).join(' / ')} jobs/s`,
    )
    notes.push(
      `   wake (${c.wake.where}): from append committed p50 ${fmt(c.wake.oursFromCommit.p50)} / p99 ${fmt(c.wake.oursFromCommit.p99)} ms` +
        (c.wake.clockRttMs !== undefined ? `; cross-process clock RTT ${fmt(c.wake.clockRttMs)} ms` : '') +
        `; baseline: INSERT + NOTIFY claimed by a LISTENing SKIP LOCKED claimer${c.wake.errors ? `; ${c.wake.errors}` : ''}`,
    )
    notes.push('   anchor (reference, not a baseline; another machine): graphile-worker ~15.6k jobs/s unbatched, ~4 ms add→start on a fast desktop.')
  }
  if (f.memory) {
    const { ours, baseline } = f.memory
    notes.push(
      `5: ${ours.connections} SSE tails vs ${baseline.connections} plain keep-alive connections; after closing every tail: ` +
        `${ours.closed?.subscriptions ?? '?'} bus subscriptions, heap ${fmt(((ours.closed?.heapUsed ?? 0) - ours.before.heapUsed) / 2 ** 20)} MiB over the start ` +
        `(RSS stays up: freed memory is kept by the allocator); idle, the statements are the bus's one head poll per process every 2 s`,
    )
  }
  for (const level of f.scale ?? []) {
    notes.push(
      `6 @${level.chats}: ${level.stop.ours.n} stops over ${level.rounds} round(s), ${level.token.ours.n} tokens; not closed early ${level.notClosedEarly}; ` +
        `CPU ours ${cpuText(level.cpu.ours)}, baseline ${cpuText(level.cpu.baseline)}` +
        (level.errors ? `; ${level.errors}` : ''),
    )
    notes.push(`   ${splitText(level)}`)
    if (level.cpu.ours.db) notes.push(...dbText(level.cpu.ours.db))
  }
  if (f.scale?.length) notes.push('   baseline: the direct streamText route; Stop = the client closing its connection.')
  if (f.takeover) {
    const t = f.takeover
    for (const part of [t.kill, t.term]) if (part) notes.push(...takeoverText(part, t.settleMs))
    notes.push(
      `   ${t.workers} generate workers on processes of their own, each warmed by one short answer of its own before it could survive a signal (${t.warmups} in all); ` +
        `the victim's place was taken by a standby (started and warmed beforehand, then paused with SIGSTOP until needed; a new one started after each sample, spawn → ready p50 ${fmt(t.spawn.p50)} ms); ` +
        `each signal waited until both running workers had held their liveness lock > ${t.settleMs} ms. Baseline: the generate lease (${t.leaseMs} ms), what a takeover waited for before liveness.`,
    )
  }
  if (f.lighthouse) notes.push(...lighthouseNotes(f.lighthouse))
  const missed = r.rows.filter((x) => meets(x) === false)
  notes.push(missed.length ? `MISSED: ${missed.map((x) => x.figure).join('; ')}` : 'all targets met')
  notes.push(`CPU while each phase ran (machine busy % of ${r.machine.cores} cores; processes in % of one core):`)
  for (const [name, c] of Object.entries(r.cpu)) notes.push(`   ${name}: ${JSON.stringify(c)}`)
  if (f.stopSend) {
    const s = f.stopSend
    const proc = (name: string, p?: { pct: number; lag: { p50: number; p99: number } }) =>
      p ? `${name} ${p.pct}% (loop delay p50 ${fmt(p.lag.p50)} / p99 ${fmt(p.lag.p99)} ms)` : `${name} ?`
    notes.push(
      `9: ${s.ours.n} Stops over HTTP, ${s.chats} chats at once (each with its SSE tail on the app process); the route's answer at the client ` +
        `p50 ${fmt(s.route.p50)} / p99 ${fmt(s.route.p99)} ms; split at the push statement's start (the Stop's createdAt): send → a2_push began ` +
        `p50 ${fmt(s.split.toPush.p50)} / p99 ${fmt(s.split.toPush.p99)}, began → upstream closed p50 ${fmt(s.split.pushToClose.p50)} / p99 ${fmt(s.split.pushToClose.p99)} ms; ` +
        `upstream not closed early: ${s.notClosedEarly}; ` +
        `upstream clock vs this one ${fmt(s.clock.offsetMs)} ms (±${fmt(s.clock.rttMs / 2)})` +
        (s.errors ? `; ${s.errors}` : ''),
    )
    notes.push(
      `   CPU: machine ${s.cpu.machineBusyPct ?? '?'}% of all cores; processes in % of one core: ` +
        `${[proc('client', s.cpu.client), proc('app', s.cpu.app), proc('worker', s.cpu.worker), proc('upstream', s.cpu.upstream)].join(' / ')} / postgres ${s.cpu.postgresPct}%`,
    )
    if (s.db) notes.push(...dbText(s.db))
    if (s.ab) {
      const line = (name: string, h: AbHalf) =>
        `     ${name}: send → upstream closed p50 ${fmt(h.ours.p50)} / p99 ${fmt(h.ours.p99)} (${h.ours.n}); send → a2_push began p50 ${fmt(h.toPush.p50)}, ` +
        `began → closed p50 ${fmt(h.pushToClose.p50)}; the route's answer p50 ${fmt(h.route.p50)} ms`
      notes.push(`   --ab, the chats alternated between this checkout's app (a) and ${s.ab.root}'s (b), same run:`)
      notes.push(line('a', s.ab.a), line('b', s.ab.b))
      notes.push(
        `     b / a: p50 ${fmt(s.ab.b.ours.p50 / s.ab.a.ours.p50)}×, p99 ${fmt(s.ab.b.ours.p99 / s.ab.a.ours.p99)}×` +
          (s.ab.appB ? `; ${proc('app b', s.ab.appB)}` : ''),
      )
    }
    if (s.trace) {
      notes.push('   --trace, each Stop in the app process (p50 / p99 ms):')
      for (const [part, ms] of Object.entries(s.trace)) notes.push(`     ${part}: ${fmt(ms.p50)} / ${fmt(ms.p99)} (${ms.n})`)
    }
    notes.push('   baseline: streamText + AbortController in the client process on the same upstream process, abort() → upstream closed.')
  }
  return notes
}

/** Figure 15: an upload beside a bare server's (target ≤ 1.3×), and a chat of photos opened beside the same chat without them. */
function uploadRows(u: UploadFigure): Row[] {
  const { withThumbs, withOriginals, without } = u.chat
  const size = `${(u.uploadBytes / 1e6).toFixed(1)} MB`
  return [
    row(`15 upload of a ${size} PNG, send → 201, p50 (bytes in Postgres)`, 'ms', u.ours.p50, u.bare.p50, {
      target: { op: '<=', value: 1.3 * u.bare.p50 },
      note: `baseline: a bare node:http server reading the body; the same bytes' raw INSERT alone: ${fmt(u.rawInsert.p50)} ms`,
    }),
    row(`15 upload of a ${size} PNG, send → 201, p50 (bytes in S3, s3rver)`, 'ms', u.oursS3.p50, u.bare.p50, {
      target: { op: '<=', value: 1.3 * u.bare.p50 },
      note: `the same bytes' raw PutObject into s3rver alone: ${fmt(u.rawPut.p50)} ms`,
    }),
    row(`15 open a chat of ${u.chat.photos} photos: bytes (thumbnails)`, 'KiB', withThumbs.bytes / 1024, without.bytes / 1024, {
      baselineLabel: 'without photos',
      note: `the originals would be ${fmt(withOriginals.bytes / 1024 / 1024)} MiB`,
    }),
    row(`15 open a chat of ${u.chat.photos} photos: time p50 (thumbnails)`, 'ms', withThumbs.ms.p50, without.ms.p50, {
      baselineLabel: 'without photos',
      note: `with the originals: ${fmt(withOriginals.ms.p50)} ms`,
    }),
  ]
}

/** Figure 13: each page beside the bare page; the issue's targets: within 5 points, TBT ≤ 1.5×, a11y and best practices 100. */
function lighthouseRows(l: LighthouseFigure): Row[] {
  const bare = l.medians.bare
  const out: Row[] = []
  for (const page of ['home', 'chat3', 'chat60'] as const) {
    const m = l.medians[page]
    const label = `13 ${PAGE_LABELS[page]}`
    out.push(row(`${label}: perf score`, 'points', m.perf, bare.perf, { target: { op: '>=', value: bare.perf - 5 }, note: `median of ${l.rounds}` }))
    out.push(row(`${label}: TBT`, 'ms', m.tbt, bare.tbt, { target: { op: '<=', value: 1.5 * bare.tbt } }))
    out.push(row(`${label}: LCP`, 'ms', m.lcp, bare.lcp))
    out.push(row(`${label}: TTI`, 'ms', m.tti, bare.tti))
    out.push(row(`${label}: main thread`, 'ms', m.mainThread, bare.mainThread))
    out.push(row(`${label}: accessibility`, 'points', m.a11y, bare.a11y, { target: { op: '>=', value: 100 } }))
    out.push(row(`${label}: best practices`, 'points', m.bestPractices, bare.bestPractices, { target: { op: '>=', value: 100 } }))
  }
  return out
}

function lighthouseNotes(l: LighthouseFigure): string[] {
  const notes = [
    `13: Lighthouse ${l.lighthouse} (mobile preset, simulated throttling) in ${l.chromium}, ${l.rounds} rounds, the pages alternated in each; chats seeded in ${fmt(l.seedMs / 1000)} s`,
  ]
  for (const [page, m] of Object.entries(l.medians) as [PageName, LighthouseFigure['medians'][PageName]][]) {
    const groups = Object.entries(m.breakdown)
      .sort((a, b) => b[1] - a[1])
      .map(([g, ms]) => `${g} ${fmt(ms)}`)
      .join(', ')
    notes.push(
      `   ${PAGE_LABELS[page]}: perf ${l.pages[page].map((r) => r.perf).join(' / ')}; TBT ${l.pages[page].map((r) => fmt(r.tbt)).join(' / ')} ms; ` +
        `transfer ${fmt(m.transferKiB)} KiB (unused JS ${fmt(m.unusedJsKiB)} KiB); main thread (ms) ${groups}` +
        (m.failed.length ? `; failed audits: ${m.failed.join(', ')}` : ''),
    )
    const last = l.pages[page].at(-1)
    if (last && page !== 'bare') notes.push(`     scripts (last run): ${last.scripts.map((s) => `${s.url} ${fmt(s.total)} ms`).join(', ')}`)
  }
  return notes
}

function median(values: (number | undefined)[]): number {
  return summarize(values.filter((v): v is number => v !== undefined)).p50
}

function takeoverText(p: TakeoverPart, settleMs: number): string[] {
  const n = p.samples.length
  const s = (x: { p50: number; p99: number }) => `p50 ${fmt(x.p50)} / p99 ${fmt(x.p99)}`
  const expected = p.signal === 'SIGKILL' ? 'OWNER_DIED' : 'SURRENDERED'
  const histories = new Map<string, number>()
  for (const x of p.samples) histories.set(x.history.join(' → '), (histories.get(x.history.join(' → ')) ?? 0) + 1)
  return [
    `7 ${p.signal}: ${n} samples (machine busy ${p.machineBusyPct ?? '?'}%); from the signal: the victim's liveness lock gone from pg_locks ${s(p.lockGone)} ms, released in the history (${expected}) ${s(p.release)} ms, ` +
      `upstream got the next attempt's request ${s(p.request)} ms, its first token ${s(p.firstToken)} ms, the chunk's append began ${s(p.append)} ms, the reader got it ${s(p.reader)} ms (max ${fmt(p.reader.max)})`,
    `   history ${expected} ${p.releasedAsExpected}/${n}; gapless logs ${p.gapless}/${n}; unmixed (attempt 1's chunks all before the next's, in the log and at the reader) ${p.unmixed}/${n}; ` +
      `one answer across attempts ${p.oneAnswer}/${n}; completed ${p.completed}/${n}; survivor warm ${p.survivorWarm}/${n}, its lock held at the signal ≥ ${fmt(Math.min(...p.samples.map((x) => x.survivorHeldMs)))} ms (settle ${settleMs} ms)` +
      (p.errors.length ? `; ${p.errors.length} failed: ${p.errors[0]}` : ''),
    `   survivor from the signal to the reader's chunk: event-loop delay p99 median ${fmt(median(p.samples.map((x) => x.survivorLag?.p99)))} ms, max of all ${fmt(Math.max(...p.samples.map((x) => x.survivorLag?.max ?? 0)))} ms; ` +
      `CPU median ${fmt(median(p.samples.map((x) => x.survivorCpuPct)))}% of a core; machine busy median ${fmt(median(p.samples.map((x) => x.machineBusyPct)))}%`,
    `   histories: ${[...histories].map(([h, c]) => `${c}× ${h}`).join('; ')}`,
  ]
}

function splitText(level: {
  split: { toAppend: { p50: number; p99: number }; toClient: { p50: number; p99: number } }
  batch: { mean: number; max: number }
}): string {
  const { toAppend, toClient } = level.split
  return (
    `split at append start: upstream→append p50 ${fmt(toAppend.p50)} / p99 ${fmt(toAppend.p99)} ms, ` +
    `append→client p50 ${fmt(toClient.p50)} / p99 ${fmt(toClient.p99)} ms; tokens per append transaction mean ${fmt(level.batch.mean)}, max ${fmt(level.batch.max)}`
  )
}

function dbText(db: import('./lib/db-sampler').DbSample): string[] {
  const lines = [`   database backends (avg over ${db.samples} samples of pg_stat_activity):`]
  for (const [app, states] of Object.entries(db.byApp)) {
    lines.push(
      `     ${app}: ${Object.entries(states)
        .map(([k, v]) => `${k} ${fmt(v)}`)
        .join(', ')}`,
    )
  }
  for (const s of db.topStatements.slice(0, 5)) lines.push(`     ${fmt(s.avg)}  ${s.query}`)
  return lines
}

function cpuText(c: import('./lib/rig').CpuSample): string {
  return (
    `machine ${c.machineBusyPct ?? '?'}% / this process ${c.parentPct}% (loop delay p99 ${fmt(c.parentLag.p99)} ms)` +
    (c.workerPct !== undefined ? ` / worker ${c.workerPct}% (loop delay p99 ${fmt(c.workerLag?.p99)} ms)` : '') +
    (c.postgresPct !== undefined ? ` / postgres ${c.postgresPct}%` : '') +
    (c.othersPct !== undefined ? ` / anchor server + redis-server ${c.othersPct}%` : '')
  )
}

function printProfiles(profiles: Record<string, ProfileSummary>): void {
  for (const [name, p] of Object.entries(profiles)) {
    console.log(
      `\nprofile ${name} (${p.totalMs} ms sampled): by package ${p.packages
        .slice(0, 8)
        .map((x) => `${x.name} ${x.selfPct}%`)
        .join(', ')}`,
    )
    for (const fn of p.functions.slice(0, 10)) console.log(`   ${String(fn.selfPct).padStart(5)}%  ${fn.name}  ${fn.where}`)
  }
}

let code = 1
try {
  code = await main()
} catch (error) {
  say(`failed: ${error instanceof Error ? error.stack : String(error)}`)
} finally {
  await cleanup()
  clearTimeout(watchdog)
}
process.exit(code)
