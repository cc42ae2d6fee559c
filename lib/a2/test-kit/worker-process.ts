/**
 * A worker in a child process, for the multi-process tests and the claim benchmark.
 *
 *   A2_URL=postgres://… A2_MODE=hang|quick [A2_LEASE_MS=1000] [A2_POLL_MS=500] \
 *     node --import tsx lib/a2/test-kit/worker-process.ts
 *
 * It opens a Postgres store, creates a server with the test consumers and starts a worker,
 * then reports on stdout, one JSON object a line:
 *   { t: 'ready', pid, worker }
 *   { t: 'started',  jobId, attempt, consumer, eventId, sessionId, at }
 *   { t: 'aborted',  jobId, attempt, code, event, at }     (ctx.signal fired; `code` of the RunAborted)
 *   { t: 'returned', jobId, attempt, at } | { t: 'threw', jobId, attempt, message, at }
 * `at` is epoch milliseconds with sub-millisecond precision (performance.timeOrigin + now),
 * comparable across processes on one machine.
 *
 * Modes: `quick` returns at once; `hang` waits for the signal, then returns after a user's
 * cancel and throws the reason after a lost claim (the page's advice); `hang-first` hangs
 * on a job's first attempt only and returns at once on later ones (a crash-then-recover test
 * can start two identical children and kill whichever claimed first); `freeze` blocks its own
 * event loop for A2_FREEZE_MS (a live worker stalled by a long synchronous task), then returns.
 * It exits when stdin closes (the parent went away) or on SIGTERM; SIGKILL is the crash.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { abortReason, consumer, createServer, openPostgresStore, type Consumer, type RunContext } from '@/lib/a2/server'
import { testContract } from './contract'

export type Report =
  | { t: 'ready'; pid: number; worker: string; at: number }
  | { t: 'started'; jobId: number; attempt: number; consumer: string; eventId: string; sessionId: string; at: number }
  | { t: 'aborted'; jobId: number; attempt: number; code: string; event?: { id: string; index: number }; at: number }
  | { t: 'returned'; jobId: number; attempt: number; at: number }
  | { t: 'threw'; jobId: number; attempt: number; message: string; at: number }

export const epochNow = () => performance.timeOrigin + performance.now()

export interface MpOptions {
  /** Lease of every consumer (claims are per worker). */
  leaseMs: number
}

/**
 * The consumers both sides define: the parent needs them for its routing (which jobs an
 * append creates, with which maxAttempts; which runs a cancel targets), the child to run them.
 *  - `mp-generate` on `generate`: abortOn cancelled, 3 attempts;
 *  - `mp-budget` on `message`: 2 attempts (the kill-exhausts-the-budget test).
 */
type Handler = (ctx: RunContext<typeof testContract, any>) => Promise<void>

export function mpConsumers(options: MpOptions, handlerFor: (name: string) => Handler = () => async () => {}): Consumer<typeof testContract, any>[] {
  return [
    consumer({
      contract: testContract,
      name: 'mp-generate',
      types: ['generate'],
      abortOn: ['cancelled'],
      maxAttempts: 3,
      leaseMs: options.leaseMs,
    }).run(handlerFor('mp-generate')),
    consumer({ contract: testContract, name: 'mp-budget', types: ['message'], maxAttempts: 2, leaseMs: options.leaseMs }).run(
      handlerFor('mp-budget'),
    ),
  ]
}

export interface WorkerChild {
  readonly process: ChildProcess
  readonly reports: Report[]
  /** stderr so far, for failure messages. */
  readonly stderr: () => string
  /** The first report (past or future) matching `where`; rejects after `timeoutMs` or if the child exits first. */
  waitFor<T extends Report['t']>(t: T, where?: (r: Extract<Report, { t: T }>) => boolean, timeoutMs?: number): Promise<Extract<Report, { t: T }>>
  /** Sends a signal (default SIGKILL: the crash) and resolves once the process is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>
}

/** Parent side: starts `lib/a2/test-kit/worker-process.ts` in a child process and collects its reports. */
export function spawnWorker(env: {
  url: string
  mode: 'quick' | 'hang' | 'hang-first' | 'freeze'
  leaseMs?: number
  pollMs?: number
  freezeMs?: number
}): WorkerChild {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(process.cwd(), 'lib', 'a2', 'test-kit', 'worker-process.ts')], {
    cwd: process.cwd(),
    env: {
      ...process.env,
      A2_URL: env.url,
      A2_MODE: env.mode,
      A2_LEASE_MS: String(env.leaseMs ?? 1_000),
      A2_POLL_MS: String(env.pollMs ?? 200),
      A2_FREEZE_MS: String(env.freezeMs ?? 0),
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const reports: Report[] = []
  const waiters = new Set<() => void>()
  let stderr = ''
  let buffered = ''
  child.stdout!.setEncoding('utf8')
  child.stdout!.on('data', (chunk: string) => {
    buffered += chunk
    let newline: number
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline)
      buffered = buffered.slice(newline + 1)
      if (!line.trim()) continue
      try {
        reports.push(JSON.parse(line) as Report)
      } catch {
        stderr += `(stdout) ${line}\n`
      }
    }
    for (const wake of [...waiters]) wake()
  })
  child.stderr!.setEncoding('utf8')
  child.stderr!.on('data', (chunk: string) => (stderr += chunk))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.once('exit', () => {
    for (const wake of [...waiters]) wake()
  })
  return {
    process: child,
    reports,
    stderr: () => stderr,
    waitFor(t, where = () => true, timeoutMs = 15_000) {
      type R = Extract<Report, { t: typeof t }>
      const find = () => reports.find((r): r is R => r.t === t && where(r as R))
      return new Promise<R>((resolve, reject) => {
        const check = () => {
          const hit = find()
          if (hit) {
            done()
            resolve(hit)
          } else if (child.exitCode !== null || child.signalCode !== null) {
            done()
            reject(new Error(`worker ${child.pid} exited (${child.exitCode ?? child.signalCode}) before a "${t}" report; stderr:\n${stderr}`))
          }
        }
        const timer = setTimeout(() => {
          done()
          reject(new Error(`no "${t}" report from worker ${child.pid} within ${timeoutMs} ms; saw ${JSON.stringify(reports)}; stderr:\n${stderr}`))
        }, timeoutMs)
        const done = () => {
          clearTimeout(timer)
          waiters.delete(check)
        }
        waiters.add(check)
        check()
      })
    },
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      await exited
    },
  }
}

async function main(): Promise<void> {
  const env = process.env
  const url = env.A2_URL
  if (!url) throw new Error('A2_URL is required')
  const mode = env.A2_MODE ?? 'quick'
  const leaseMs = Number(env.A2_LEASE_MS ?? 1_000)
  const report = (r: Report) => process.stdout.write(`${JSON.stringify(r)}\n`)

  const store = await openPostgresStore(url, { max: 4 })
  const handlerFor =
    (name: string): Handler =>
    async (ctx) => {
      const base = { jobId: ctx.jobId, attempt: ctx.attempt }
      report({ t: 'started', ...base, consumer: name, eventId: ctx.event.id, sessionId: ctx.sessionId, at: epochNow() })
      if (mode === 'freeze') {
        const until = performance.now() + Number(env.A2_FREEZE_MS ?? 0)
        while (performance.now() < until) {
          // a synchronous stall: no timer, no renewal, no I/O callback runs meanwhile
        }
      }
      if (mode === 'hang' || (mode === 'hang-first' && ctx.attempt === 1)) {
        await new Promise<void>((resolve) => {
          if (ctx.signal.aborted) resolve()
          else ctx.signal.addEventListener('abort', () => resolve(), { once: true })
        })
        const reason = abortReason(ctx.signal)
        report({ t: 'aborted', ...base, code: reason?.code ?? 'UNKNOWN', event: reason?.event, at: epochNow() })
        if (!reason?.isCancel) {
          report({ t: 'threw', ...base, message: String(reason?.message), at: epochNow() })
          throw ctx.signal.reason
        }
      }
      report({ t: 'returned', ...base, at: epochNow() })
    }
  const consumers = mpConsumers({ leaseMs }, handlerFor)
  const server = createServer({ contract: testContract, consumers, store })
  const worker = await server.startWorker({ pollMs: Number(env.A2_POLL_MS ?? 500) })
  report({ t: 'ready', pid: process.pid, worker: worker.id, at: epochNow() })

  let closing = false
  const shutdown = async () => {
    if (closing) return
    closing = true
    await server.stopWorkers({ graceMs: 0 }).catch(() => {})
    await store.close().catch(() => {})
    process.exit(0)
  }
  process.stdin.on('end', shutdown)
  process.stdin.on('close', shutdown)
  process.stdin.resume()
  process.on('SIGTERM', shutdown)
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error) => {
    process.stderr.write(`worker-process failed: ${error?.stack ?? error}\n`)
    process.exit(1)
  })
}
