/**
 * Figure 7 — Takeover (issue 11): how soon an answer continues on another worker when the
 * worker running it dies (kill -9) or is shut down (SIGTERM), on Postgres.
 *
 * Two `generate` workers on processes of their own (worker-child.ts, `chat` mode), the
 * upstream, the chat's a2 server and an SSE reader here. Each sample:
 *   1. both workers are up, and each has held its liveness lock (an advisory lock on a
 *      connection of its own) longer than LIVENESS_SETTLE_MS: a worker judges others dead
 *      only after that, so the survivor is one that may (the only wait that is a duration);
 *   2. a new chat: push message + generate, the reader tails the log over SSE;
 *   3. once the reader has seen a random 3–28 chunks of attempt 1 (a random point in the
 *      answer spread over more than one 500 ms drain period, so every phase of the
 *      survivor's drain tick is sampled), the worker that owns the run (a2_jobs.owner carries its pid) gets SIGKILL
 *      — or SIGTERM;
 *   4. measured from the signal (this process's clock) to the reader receiving the first
 *      chunk of the next attempt (payload.attempt > 1); split by where the time went: the
 *      release in the run's history (OWNER_DIED / SURRENDERED), the upstream's second
 *      request and its first token, the chunk's append (created_at);
 *   5. a worker is spawned in place of the one that went (after the takeover was measured,
 *      so its start-up does not load the machine during the measurement), the answer is
 *      let finish, and the record is checked: the history says why the run moved, the log
 *      is gapless, every chunk of attempt 1 comes before every chunk of the next (in the
 *      log and in the order the reader got them), and the chunks of both attempts spell
 *      the answer exactly once (the successor continued, nothing lost or repeated).
 *
 * Baseline: the generate consumer's lease (15 s), which is what a takeover waited for before
 * liveness (issue 11 measured 15 s + the restart). It is the mechanism's bound, not a
 * second measurement: measuring it would cost ≥ 15 s per sample.
 */
import { spawn as spawnProcess, type ChildProcess } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import { sql } from 'drizzle-orm'
import type { Store } from '@/lib/a2/server'
import { buildChatServer } from '@/lib/chat/server/chat-server'
import { LIVENESS_SETTLE_MS } from '@/lib/a2/internal/runtime/liveness'
import { LIFE_LOCK_CLASS } from '@/lib/a2/internal/store/store'
import { OWNER, openSse, serveBench } from '../lib/http'
import { prompt, startBenchUpstream, tagOf, token } from '../lib/upstream'
import { spawnChild, type Child } from '../lib/children'
import { rows } from '../lib/db'
import { randomInt, until, within } from '../lib/time'
import { summarize, type Summary } from '../lib/stats'
import { cpuMeter } from '../lib/machine'

/** lib/chat/answer/generate.ts: the lease a takeover waited for before liveness. */
export const GENERATE_LEASE_MS = 15_000
const TOKENS = 60

export type Signal = 'SIGKILL' | 'SIGTERM'

export interface TakeoverSample {
  signal: Signal
  /** signal → the reader (SSE) receives the first chunk of the next attempt */
  toReader: number
  /** signal → that chunk's append transaction began (created_at) */
  toAppend: number
  /** signal → Postgres no longer shows the victim's liveness lock (polled every 5 ms until then) */
  toLockGone?: number
  /** signal → the release recorded in the run's history (OWNER_DIED / SURRENDERED) */
  toRelease?: number
  /** signal → the upstream gets the next attempt's request */
  toRequest?: number
  /** signal → the upstream writes its first token */
  toFirstToken?: number
  /** For comparison, attempt 1 of the same run: upstream's first token → its first chunk's append began / the reader got it. */
  firstAttempt?: { toAppend: number; toReader: number }
  /** The next attempt: upstream's first token → its first chunk's append began. */
  nextTokenToAppend?: number
  /** chunks of attempt 1 the reader had when the signal was sent */
  chunksBefore: number
  /** how long the survivor had held its liveness lock when the signal was sent (lower bound) */
  survivorHeldMs: number
  /** the survivor had run an answer before */
  survivorWarm: boolean
  /** From the signal to the reader's first chunk of the next attempt: the survivor's event-loop delay and CPU (% of a core), the machine's CPU busy %. */
  survivorLag?: { p99: number; max: number }
  survivorCpuPct?: number
  machineBusyPct?: number
  history: string[]
  nextAttempt: number
  gapless: boolean
  /** attempt 1's chunks all before the next attempt's, in the log and as the reader got them */
  unmixed: boolean
  /** the chunks of all attempts spell the answer exactly once */
  oneAnswer: boolean
  completed: boolean
}

export interface TakeoverPart {
  signal: Signal
  reader: Summary
  append: Summary
  lockGone: Summary
  release: Summary
  request: Summary
  firstToken: Summary
  samples: TakeoverSample[]
  /** samples whose survivor had run an answer before */
  survivorWarm: number
  /** samples whose history shows the expected release (OWNER_DIED for SIGKILL, SURRENDERED for SIGTERM) */
  releasedAsExpected: number
  gapless: number
  unmixed: number
  oneAnswer: number
  completed: number
  /** machine busy % while this part ran */
  machineBusyPct?: number
  errors: string[]
}

export interface TakeoverFigure {
  leaseMs: number
  settleMs: number
  workers: number
  kill?: TakeoverPart
  term?: TakeoverPart
  /** ms from spawning a worker to its `ready` (the respawn that keeps two alive) */
  spawn: Summary
  /** short answers run so that each worker had run one before it could be a survivor */
  warmups: number
}

interface BenchWorker {
  child: Child
  pid: number
  /** Has run an answer (the first one in a fresh process pays for cold code paths). */
  warm: boolean
  /** performance.now() when it said ready: its liveness lock was taken before that. */
  readyAt: number
  app: string
  /** SIGSTOPped (the standby, or the others during a warm-up). */
  paused: boolean
}

export async function takeoverFigure(
  store: Store,
  options: { dbUrl: string; kills: number; terms: number; tokenMs: number; deadline: number; say?: (line: string) => void },
): Promise<TakeoverFigure> {
  const say = options.say ?? (() => {})
  const upstream = await startBenchUpstream(options.tokenMs)
  const { server: chat } = buildChatServer(store, { OPENAI_API_KEY: 'bench', OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'bench' })
  const http = await serveBench({ a2: chat })
  /** The two running workers. */
  const workers: BenchWorker[] = []
  /** Every worker process alive (the two running ones and the standby). */
  const alive = new Set<BenchWorker>()
  /** A third worker, warmed, then paused: the replacement, ready without waiting for a process start. */
  let standby: BenchWorker | undefined
  const spawnTimes: number[] = []
  let spawned = 0

  /**
   * SIGSTOP, with a guard: a stopped child cannot see the IPC channel close, so if this
   * process died meanwhile (even by SIGKILL) the guard, a detached shell polling both pids,
   * resumes it, and the child then exits by itself. The guard ends when either is gone, or
   * is ended (by its pid) on resume.
   */
  const guards = new Map<BenchWorker, ChildProcess>()
  const pause = (w: BenchWorker) => {
    w.child.process.kill('SIGSTOP')
    w.paused = true
    const script = `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${w.pid} 2>/dev/null; do sleep 0.5; done; kill -CONT ${w.pid} 2>/dev/null`
    const guard = spawnProcess('sh', ['-c', script], { detached: true, stdio: 'ignore' })
    guard.unref()
    guards.set(w, guard)
  }
  const resume = (w: BenchWorker) => {
    w.child.process.kill('SIGCONT')
    w.paused = false
    guards.get(w)?.kill('SIGKILL')
    guards.delete(w)
  }

  /** A worker process, not yet running for the figure (in neither `workers` nor `standby`). */
  const spawn = async (): Promise<BenchWorker> => {
    const app = `a2-bench-takeover-${++spawned}`
    const started = performance.now()
    const child = await spawnChild('worker-child.ts', ['chat'], {
      env: { BENCH_DB_URL: options.dbUrl, BENCH_UPSTREAM_URL: upstream.url, BENCH_WORKER_CONCURRENCY: '8', PGAPPNAME: app },
    })
    const worker: BenchWorker = { child, pid: Number(child.ready.pid), warm: false, readyAt: performance.now(), app, paused: false }
    spawnTimes.push(worker.readyAt - started)
    alive.add(worker)
    child.process.once('exit', () => {
      alive.delete(worker)
      const i = workers.indexOf(worker)
      if (i >= 0) workers.splice(i, 1)
      if (standby === worker) standby = undefined
    })
    return worker
  }

  /** Applications whose liveness lock Postgres shows as held right now. */
  const locksHeld = async (): Promise<Set<string>> => {
    const held = await rows<{ app: string }>(
      store,
      sql`select a.application_name as app from pg_locks l join pg_stat_activity a on a.pid = l.pid
          where l.locktype = 'advisory' and l.classid = ${LIFE_LOCK_CLASS} and l.objsubid = 2 and l.granted`,
    )
    return new Set(held.map((r) => r.app))
  }

  /** The pid of the worker that claimed a chat's run (owner is `<host>:<pid>:<rand>`; cleared when the run ends). */
  const ownerPid = async (sessionId: string): Promise<number | undefined> => {
    const [job] = await rows<{ owner: string | null }>(
      store,
      sql`select owner from a2_jobs where session_id = ${sessionId} and consumer = 'generate'`,
    )
    const pid = Number(/:(\d+):[^:]*$/.exec(job?.owner ?? '')?.[1])
    return Number.isFinite(pid) ? pid : undefined
  }

  const runStatus = async (sessionId: string): Promise<string | undefined> => {
    const [job] = await rows<{ status: string }>(store, sql`select status from a2_jobs where session_id = ${sessionId} and consumer = 'generate'`)
    return job?.status
  }

  /**
   * A short answer run to its end by `worker`: the first answer in a fresh process pays for
   * code run for the first time (measured: +100–400 ms between the upstream's first token and
   * the append), and the survivor is a long-running worker. The other workers are
   * paused meanwhile (SIGSTOP, ~0.5 s, holding no runs; their liveness connections stay
   * open) so that this one claims it.
   */
  let warmups = 0
  const warmUp = async (worker: BenchWorker): Promise<void> => {
    const others = [...alive].filter((w) => w !== worker && !w.paused)
    for (const w of others) pause(w)
    try {
      const tag = `warm${process.pid}x${++warmups}`
      const { id } = await chat.sessions.create(OWNER)
      await chat.push(id, OWNER, {
        events: [
          { id: 'm', type: 'message', payload: { text: prompt(tag, 10) } },
          { id: 'g', type: 'generate', payload: { for: 'm' } },
        ],
      })
      await until(async () => (await ownerPid(id)) === worker.pid || (await runStatus(id)) !== 'ACTIVE', 10_000, 'a warm-up run to be claimed', 5)
      await until(async () => (await runStatus(id)) !== 'ACTIVE', 10_000, 'a warm-up run to end', 10)
      if ((await runStatus(id)) !== 'COMPLETED') throw new Error(`warm-up run ended ${await runStatus(id)}`)
      worker.warm = true
    } finally {
      for (const w of others) resume(w)
    }
  }

  /** A new standby: started, warmed, paused. */
  const prepareStandby = async (started = spawn()): Promise<void> => {
    const w = await started
    await warmUp(w)
    pause(w)
    standby = w
  }

  /**
   * Two workers running (the standby resumed in place of one that went), each warm (has
   * run an answer) and holding its lock past the settle time (its `ready` came after the
   * lock was taken; a paused process keeps its lock, and its own clock counts the pause).
   */
  const twoTrusted = async () => {
    while (workers.length < 2) {
      const next = standby ?? (await spawn())
      standby = undefined
      if (next.paused) resume(next)
      workers.push(next)
    }
    for (const w of workers) if (!w.warm) await warmUp(w)
    if (!standby) await prepareStandby()
    await until(
      async () => {
        const held = await locksHeld()
        return workers.every((w) => held.has(w.app) && performance.now() - w.readyAt > LIVENESS_SETTLE_MS + 50)
      },
      LIVENESS_SETTLE_MS + 15_000,
      'the workers to hold their liveness locks past the settle time',
      25,
    )
  }

  let seq = 0
  const sample = async (signal: Signal): Promise<TakeoverSample> => {
    await twoTrusted()
    const tag = `to${process.pid}x${++seq}`
    const full = Array.from({ length: TOKENS }, (_, i) => token(tag, i)).join('')
    const { id } = await chat.sessions.create(OWNER)
    const seen: { attempt: number; delta: string; at: number }[] = []
    let nextAt: number | undefined
    let markNext!: () => void
    let markFinished!: () => void
    let markPoint!: () => void
    const next = new Promise<void>((r) => (markNext = r))
    const finished = new Promise<void>((r) => (markFinished = r))
    const point = new Promise<void>((r) => (markPoint = r))
    // 3–28 chunks at 20 ms: the signal lands anywhere in 520 ms, more than one 500 ms
    // drain period, so it samples every phase of the survivor's drain tick.
    const killAfter = randomInt(3, 28)
    let lastIndex = -1
    const reader = openSse(`${http.url}/a2/${id}?after=-1`, ({ data, at }) => {
      lastIndex = data.index
      if (data.type === 'chunk') {
        seen.push({ attempt: data.payload.attempt, delta: data.payload.delta, at })
        if (data.payload.attempt === 1 && seen.length === killAfter) markPoint()
        if (data.payload.attempt > 1 && nextAt === undefined) {
          nextAt = at
          markNext()
        }
      } else if (data.type === 'finished') markFinished()
    })
    let done = false
    try {
      await within(reader.opened, 10_000, 'SSE tail to open')
      await chat.push(id, OWNER, {
        events: [
          { id: 'm', type: 'message', payload: { text: prompt(tag, TOKENS) } },
          { id: 'g', type: 'generate', payload: { for: 'm' } },
        ],
      })
      await within(point, 20_000, `chunk ${killAfter} of attempt 1 at the reader`)
      const [job] = await rows<{ id: number; owner: string | null; attempt: number }>(
        store,
        sql`select id, owner, attempt from a2_jobs where session_id = ${id} and consumer = 'generate'`,
      )
      const owner = Number(/:(\d+):[^:]*$/.exec(job?.owner ?? '')?.[1])
      const victim = workers.find((w) => w.pid === owner)
      if (!victim || Number(job.attempt) !== 1)
        throw new Error(`run owned by ${job?.owner} (attempt ${job?.attempt}), not one of our workers' first attempt`)
      const survivor = workers.find((w) => w !== victim)!
      const survivorHeldMs = performance.now() - survivor.readyAt
      const survivorWarm = survivor.warm
      const chunksBefore = seen.length
      const exited = new Promise<void>((r) => victim.child.process.once('exit', () => r()))
      await survivor.child.call({ cmd: 'cpu' }) // restarts its CPU and loop-delay meters
      const machineMeter = cpuMeter()

      const sentAt = performance.now()
      victim.child.process.kill(signal)
      const sentWall = performance.timeOrigin + sentAt
      let toLockGone: number | undefined
      const lockGone = until(
        async () => {
          const gone = !(await locksHeld()).has(victim.app)
          if (gone) toLockGone ??= performance.now() - sentAt
          return gone
        },
        20_000,
        `${victim.app}'s liveness lock to go`,
        5,
      ).catch(() => {})
      await within(next, GENERATE_LEASE_MS + 10_000, 'the first chunk of the next attempt at the reader')
      const toReader = nextAt! - sentAt
      const machineBusyPct = machineMeter.stop()?.busyPct
      const survivorLoad = await survivor.child.call<{ pct: number; lag: { p99: number; max: number } }>({ cmd: 'cpu' }, 5_000).catch(() => undefined)

      // Measured: now keep two alive (the start-up's CPU stays out of the measurement).
      survivor.warm = true
      await lockGone
      await within(exited, 20_000, `worker ${victim.pid} to exit after ${signal}`)
      // The standby takes the victim's place; a new standby starts meanwhile, and is warmed
      // once this answer is over (a warm-up pauses the others).
      const spawning = spawn()
      if (standby) {
        resume(standby)
        workers.push(standby)
        standby = undefined
      }
      await within(finished, 30_000, 'the answer to finish')
      done = true
      await until(async () => (await runStatus(id)) !== 'ACTIVE', 10_000, 'the run to end', 10)
      await prepareStandby(spawning)

      const log = await rows<{ index: number; type: string; payload: any; at: number }>(
        store,
        sql`select index, type, payload, extract(epoch from created_at) * 1000 as at from a2_events where session_id = ${id} order by index`,
      )
      const [{ head }] = await rows<{ head: number }>(store, sql`select head from a2_sessions where id = ${id}`)
      const history = await rows<{ attempt: number; from: string; to: string; reason: string; at: number }>(
        store,
        sql`select attempt, from_status as "from", to_status as "to", reason, extract(epoch from at) * 1000 as at
            from a2_job_transitions where job_id = ${job.id} order by id`,
      )
      const [final] = await rows<{ status: string; attempt: number }>(store, sql`select status, attempt from a2_jobs where id = ${job.id}`)
      const chunks = log.filter((e) => e.type === 'chunk')
      const nextChunks = chunks.filter((e) => e.payload.attempt > 1)
      const firstChunks = chunks.filter((e) => e.payload.attempt === 1)
      const nextAttempt = nextChunks[0]?.payload.attempt ?? 0
      const released = history.find((h) => h.reason === (signal === 'SIGKILL' ? 'OWNER_DIED' : 'SURRENDERED'))
      // The next attempt's request: the second one carrying this chat's tag.
      const requests = upstream.requests.filter((r) => tagOf(r.body)?.tag === tag)
      const request = requests.length === 2 ? requests[1] : undefined
      const seenAttempts = seen.map((s) => s.attempt)
      const first = requests[0]
      const firstAttempt =
        first?.firstTokenAt !== undefined && firstChunks[0] && seen[0]
          ? { toAppend: Number(firstChunks[0].at) - (performance.timeOrigin + first.firstTokenAt), toReader: seen[0].at - first.firstTokenAt }
          : undefined
      return {
        signal,
        toReader,
        toAppend: Number(nextChunks[0]?.at) - sentWall,
        toLockGone,
        toRelease: released ? Number(released.at) - sentWall : undefined,
        toRequest: request ? request.startedAt - sentAt : undefined,
        toFirstToken: request?.firstTokenAt !== undefined ? request.firstTokenAt - sentAt : undefined,
        firstAttempt,
        nextTokenToAppend:
          request?.firstTokenAt !== undefined && nextChunks[0]
            ? Number(nextChunks[0].at) - (performance.timeOrigin + request.firstTokenAt)
            : undefined,
        chunksBefore,
        survivorHeldMs,
        survivorWarm,
        survivorLag: survivorLoad ? { p99: survivorLoad.lag.p99, max: survivorLoad.lag.max } : undefined,
        survivorCpuPct: survivorLoad?.pct,
        machineBusyPct,
        history: history.map((h) => `${h.attempt}:${h.from}>${h.to}:${h.reason}`),
        nextAttempt,
        gapless: log.length === Number(head) && log.every((e, i) => Number(e.index) === i),
        unmixed:
          firstChunks.length > 0 &&
          nextChunks.length > 0 &&
          Math.max(...firstChunks.map((e) => Number(e.index))) < Math.min(...nextChunks.map((e) => Number(e.index))) &&
          new Set(nextChunks.map((e) => e.payload.attempt)).size === 1 &&
          seenAttempts.every((a, i) => i === 0 || a >= seenAttempts[i - 1]),
        oneAnswer: chunks.map((e) => e.payload.delta).join('') === full,
        completed: final?.status === 'COMPLETED',
      }
    } finally {
      reader.close()
      // A sample that failed half-way must not leave its run streaming into the next one.
      if (!done) await chat.push(id, OWNER, { id: 'c', type: 'cancelled', payload: { of: 'g', lastSeenIndex: lastIndex } }).catch(() => {})
    }
  }

  const part = async (signal: Signal, count: number): Promise<TakeoverPart> => {
    const samples: TakeoverSample[] = []
    const errors: string[] = []
    const meter = cpuMeter()
    for (let i = 0; i < count && Date.now() < options.deadline; i++) {
      try {
        samples.push(await sample(signal))
      } catch (error) {
        errors.push(error instanceof Error ? error.message : String(error))
        say(`takeover ${signal} sample ${i + 1} failed: ${errors.at(-1)}`)
        if (errors.length >= 3) break
      }
    }
    const expected = signal === 'SIGKILL' ? 'OWNER_DIED' : 'SURRENDERED'
    return {
      signal,
      reader: summarize(samples.map((s) => s.toReader)),
      append: summarize(samples.map((s) => s.toAppend)),
      lockGone: summarize(samples.flatMap((s) => (s.toLockGone === undefined ? [] : [s.toLockGone]))),
      release: summarize(samples.flatMap((s) => (s.toRelease === undefined ? [] : [s.toRelease]))),
      request: summarize(samples.flatMap((s) => (s.toRequest === undefined ? [] : [s.toRequest]))),
      firstToken: summarize(samples.flatMap((s) => (s.toFirstToken === undefined ? [] : [s.toFirstToken]))),
      samples,
      releasedAsExpected: samples.filter((s) => s.history.some((h) => h.endsWith(`:${expected}`))).length,
      survivorWarm: samples.filter((s) => s.survivorWarm).length,
      gapless: samples.filter((s) => s.gapless).length,
      unmixed: samples.filter((s) => s.unmixed).length,
      oneAnswer: samples.filter((s) => s.oneAnswer).length,
      completed: samples.filter((s) => s.completed).length,
      machineBusyPct: meter.stop()?.busyPct,
      errors,
    }
  }

  try {
    const figure: TakeoverFigure = { leaseMs: GENERATE_LEASE_MS, settleMs: LIVENESS_SETTLE_MS, workers: 2, spawn: summarize([]), warmups: 0 }
    if (options.kills > 0) figure.kill = await part('SIGKILL', options.kills)
    if (options.terms > 0) figure.term = await part('SIGTERM', options.terms)
    figure.spawn = summarize(spawnTimes)
    figure.warmups = warmups
    return figure
  } finally {
    for (const w of alive) if (w.paused) resume(w)
    await Promise.all([...alive].map((w) => w.child.stop()))
    await http.close()
    await upstream.close()
  }
}
