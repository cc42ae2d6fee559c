/**
 * The chaos suite's rig: real processes on real Postgres. App instances are `next start` on
 * the build in A2_NEXT_DIST_DIR (default `.next-chaos`), workers are `npx tsx scripts/worker.ts`;
 * each runs in its own process group (detached) and is stopped by killing the group. Every
 * process, database and cluster a suite starts is registered with a `Rig` whose `teardown()`
 * (afterAll, also after a failure) removes them all; a process-exit hook SIGKILLs any group
 * still alive if the test runner itself dies.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, rmSync, type WriteStream } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import postgres from 'postgres'
import { test, type TestInfo } from '@playwright/test'
import { startUpstream, type Upstream, type UpstreamOptions } from '../../scripts/upstream-server'
import { E2E_LIMITS } from '../limits'
import { pollUntil, PollAbort } from '../../test/poll'
import { freePort } from '../helpers/free-port'

export const ROOT = process.cwd()
export const DIST_DIR = process.env.A2_NEXT_DIST_DIR || '.next-chaos'
export const BASE_DATABASE_URL = process.env.TEST_DATABASE_URL || ''
export const SKIP_REASON = 'chaos tests need real Postgres: set TEST_DATABASE_URL=postgres://… (scripts/test.sh exports it when CI gives Postgres)'
/** Both instances sign the identity cookie with the same secret, so one browser is one user on A and B. */
const AUTH_SECRET = 'chaos-suite-shared-secret-0123456789abcdef'
/** Every process's output, one file each: inside the chaos config's outputDir (cleaned at the start of a run) unless CHAOS_LOG_DIR says otherwise. */
const LOG_DIR = process.env.CHAOS_LOG_DIR || path.join(ROOT, 'test-results', 'chaos', 'logs')

/** Thrown from a waitUntil check: stops the wait at once instead of being retried until the timeout. */
export class FatalError extends PollAbort {}

/**
 * Polls `check` until it returns something other than undefined/false, or throws `what` after
 * `timeoutMs` (test/poll.ts). For the state of the processes the rig runs, read from outside:
 * a port that answers, a process group that is gone, a row in Postgres, output printed so far.
 */
export async function waitUntil<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 15_000,
  everyMs = 100,
): Promise<T> {
  return pollUntil(what, check, { timeoutMs, everyMs })
}

/**
 * Resolves with `promise`, or rejects saying `what` did not happen within `timeoutMs`: a bound
 * on an awaited condition (a socket closing, a request arriving), never a pause.
 */
export async function within<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not happen within ${timeoutMs} ms`)), timeoutMs))),
    ])
  } finally {
    clearTimeout(timer)
  }
}

// ---------------------------------------------------------------------------------------
// Processes

const liveGroups = new Set<number>()
let exitHookInstalled = false
function installExitHook() {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on('exit', () => {
    for (const pgid of liveGroups) {
      try {
        process.kill(-pgid, 'SIGKILL')
      } catch {
        // gone
      }
    }
  })
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal)
  } catch {
    // ESRCH: the whole group is gone
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

export class Proc {
  readonly child: ChildProcess
  /** The process group id (= the pid of the child we spawned, the group leader). */
  readonly pgid: number
  private out = ''
  private readonly log: WriteStream
  readonly exited: Promise<number | null>
  exitCode: number | null | undefined = undefined

  constructor(
    readonly name: string,
    command: string,
    args: string[],
    env: Record<string, string>,
  ) {
    installExitHook()
    mkdirSync(LOG_DIR, { recursive: true })
    this.log = createWriteStream(path.join(LOG_DIR, `${name}.log`), { flags: 'a' })
    this.child = spawn(command, args, {
      cwd: ROOT,
      env: { ...cleanEnv(), ...env } as NodeJS.ProcessEnv,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    if (this.child.pid === undefined) throw new Error(`could not spawn ${name}`)
    this.pgid = this.child.pid
    liveGroups.add(this.pgid)
    const capture = (data: Buffer) => {
      const text = data.toString()
      this.out += text
      if (this.out.length > 400_000) this.out = this.out.slice(-200_000)
      this.log.write(text)
    }
    this.child.stdout!.on('data', capture)
    this.child.stderr!.on('data', capture)
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exitCode = code ?? (signal ? -1 : null)
        capture(Buffer.from(`\n[chaos] ${name} exited (code ${code}, signal ${signal})\n`))
        resolve(code)
      })
    })
  }

  output(): string {
    return this.out
  }

  tail(lines = 40): string {
    return this.out.split('\n').slice(-lines).join('\n')
  }

  get running(): boolean {
    return this.exitCode === undefined
  }

  async waitForOutput(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
    return waitUntil(
      `${this.name} to print ${pattern}`,
      () => {
        const match = this.out.match(pattern)
        if (match) return match
        if (!this.running) throw new FatalError(`${this.name} exited before printing ${pattern}:\n${this.tail()}`)
        return undefined
      },
      timeoutMs,
      50,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n--- ${this.name} output ---\n${this.tail()}`)
    })
  }

  /** kill -9 of the whole group (npx, tsx, node): the crash. Resolves when the group is gone. */
  async crash(): Promise<void> {
    killGroup(this.pgid, 'SIGKILL')
    await waitUntil(`${this.name}'s group to die`, () => !groupAlive(this.pgid), 10_000, 20)
    liveGroups.delete(this.pgid)
  }

  /** SIGTERM to the group, then SIGKILL after `graceMs`. Never throws. */
  async stop(graceMs = 3_000): Promise<void> {
    if (groupAlive(this.pgid)) {
      killGroup(this.pgid, 'SIGTERM')
      // The group's exit has no event here (npx's children are not ours to wait on): polled.
      const gone = () => !groupAlive(this.pgid)
      await pollUntil(`${this.name}'s group to exit on SIGTERM`, gone, { timeoutMs: graceMs, everyMs: 50 }).catch(() => {})
      killGroup(this.pgid, 'SIGKILL')
      await pollUntil(`${this.name}'s group to die of SIGKILL`, gone, { timeoutMs: 5_000, everyMs: 50 }).catch(() => {})
    }
    liveGroups.delete(this.pgid)
    this.log.end()
  }
}

/** The runner's env minus what would change the children's behaviour behind our back. */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue
    if (
      /^(DATABASE_URL|TEST_DATABASE_URL|E2E_DATABASE_URL|OPENAI_|A2_|NEXT_|__NEXT|PORT$|NODE_OPTIONS$|PW_|PLAYWRIGHT_|TEST_WORKER_INDEX|TEST_PARALLEL_INDEX)/.test(
        k,
      )
    )
      continue
    env[k] = v
  }
  env.NEXT_TELEMETRY_DISABLED = '1'
  return env
}

// ---------------------------------------------------------------------------------------
// The app and workers

export interface ModelEnv {
  /** Base URL ending in /v1 (startUpstream's `url`). */
  upstreamUrl: string
}

export interface App {
  name: string
  url: string
  proc: Proc
}

export interface Worker {
  name: string
  /** `<hostname>:<pid>:<rand>`: what a2_jobs.owner holds while it runs a job. */
  id: string
  pid: number
  proc: Proc
}

export interface Rig {
  /** Creates a fresh database on TEST_DATABASE_URL's server, dropped at teardown. */
  createDatabase(prefix?: string): Promise<string>
  /** `port`: listen there (a restart of a killed app on the port its open tabs point at); default a free one. */
  startApp(name: string, options: { databaseUrl: string; upstreamUrl: string; embeddedWorker?: boolean; port?: number }): Promise<App>
  startWorker(name: string, options: { databaseUrl: string; upstreamUrl: string }): Promise<Worker>
  /** The upstream test model (scripts/upstream-server.ts), closed at teardown. */
  startUpstream(options: UpstreamOptions): Promise<Upstream>
  /** A postgres client for assertions, closed at teardown. */
  sql(url: string): postgres.Sql
  /** Runs at teardown (last registered, first run). */
  onTeardown(fn: () => Promise<void> | void): void
  procs(): Proc[]
  /** The tail of every process's output, for failure messages. */
  report(lines?: number): string
  teardown(): Promise<void>
}

export function assertBuilt(): void {
  if (!existsSync(path.join(ROOT, DIST_DIR, 'BUILD_ID'))) {
    throw new Error(`no production build in ${DIST_DIR}/: run \`A2_NEXT_DIST_DIR=${DIST_DIR} NEXT_TELEMETRY_DISABLED=1 npx next build\` first`)
  }
}

export function createRig(suite: string): Rig {
  const procs: Proc[] = []
  const teardowns: Array<() => Promise<void> | void> = []
  const clients: postgres.Sql[] = []
  const tmp = mkdtempSync(path.join(tmpdir(), `a2-chaos-${suite}-`))
  teardowns.push(() => rmSync(tmp, { recursive: true, force: true }))

  const modelEnv = (upstreamUrl: string) => ({
    OPENAI_API_KEY: 'x',
    OPENAI_BASE_URL: upstreamUrl,
    OPENAI_MODEL: 'upstream-chaos',
  })

  const rig: Rig = {
    async createDatabase(prefix = 'a2_chaos') {
      if (!BASE_DATABASE_URL) throw new Error(SKIP_REASON)
      const name = `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 12)}`
      const admin = postgres(BASE_DATABASE_URL, { max: 1, onnotice: () => {} })
      try {
        await admin.unsafe(`create database ${name}`)
      } finally {
        await admin.end()
      }
      teardowns.push(async () => {
        const dropper = postgres(BASE_DATABASE_URL, { max: 1, onnotice: () => {} })
        try {
          await dropper.unsafe(`drop database if exists ${name} with (force)`)
        } finally {
          await dropper.end()
        }
      })
      const url = new URL(BASE_DATABASE_URL)
      url.pathname = `/${name}`
      return url.toString()
    },

    async startApp(name, { databaseUrl, upstreamUrl, embeddedWorker = false, port: fixedPort }) {
      assertBuilt()
      const port = fixedPort ?? (await freePort())
      const proc = new Proc(`${suite}-${name}`, 'npx', ['next', 'start', '-p', String(port), '-H', '127.0.0.1'], {
        A2_NEXT_DIST_DIR: DIST_DIR,
        NEXT_MANUAL_SIG_HANDLE: 'true',
        A2_DATA_DIR: path.join(tmp, name),
        DATABASE_URL: databaseUrl,
        AUTH_SECRET,
        A2_EMBEDDED_WORKER: embeddedWorker ? '1' : '0',
        ...E2E_LIMITS,
        ...modelEnv(upstreamUrl),
      })
      procs.push(proc)
      const url = `http://127.0.0.1:${port}`
      await waitUntil(
        `${name} to answer on ${url}`,
        async () => {
          if (!proc.running) throw new FatalError(`${name} exited:\n${proc.tail()}`)
          const response = await fetch(`${url}/api/sessions`).catch(() => undefined)
          return response?.ok === true
        },
        90_000,
        200,
      ).catch((error: Error) => {
        throw new Error(`${error.message}\n--- ${name} output ---\n${proc.tail()}`)
      })
      // The instrumentation boot log: the store is open and the embedded worker (or none) is decided.
      const [boot] = await proc.waitForOutput(/\[a2\] postgres store ready[^\n]*/, 30_000)
      if (!embeddedWorker && !boot.includes('no worker in this process'))
        throw new Error(`${name} runs an embedded worker despite A2_EMBEDDED_WORKER=0: ${boot}`)
      return { name, url, proc }
    },

    async startWorker(name, { databaseUrl, upstreamUrl }) {
      const proc = new Proc(`${suite}-${name}`, 'npx', ['tsx', 'scripts/worker.ts'], {
        DATABASE_URL: databaseUrl,
        A2_DATA_DIR: path.join(tmp, name),
        ...modelEnv(upstreamUrl),
      })
      procs.push(proc)
      const [, id] = await proc.waitForOutput(/\[a2\] worker (\S+) running/, 60_000)
      const pid = Number(id.split(':').at(-2))
      return { name, id, pid, proc }
    },

    async startUpstream(options) {
      const upstream = await startUpstream(options)
      teardowns.push(() => upstream.close())
      return upstream
    },

    sql(url) {
      const client = postgres(url, { max: 2, onnotice: () => {}, connect_timeout: 5 })
      clients.push(client)
      return client
    },

    onTeardown(fn) {
      teardowns.push(fn)
    },

    procs: () => procs,

    report(lines = 40) {
      return procs.map((p) => `--- ${p.name} (pgid ${p.pgid}${p.running ? '' : `, exited ${p.exitCode}`}) ---\n${p.tail(lines)}`).join('\n')
    },

    async teardown() {
      const errors: unknown[] = []
      // Processes first (they hold connections to the databases), all at once.
      await Promise.all(procs.map((p) => p.stop().catch((e) => errors.push(e))))
      await Promise.all(clients.map((c) => c.end({ timeout: 1 }).catch(() => {})))
      for (const fn of teardowns.reverse()) {
        try {
          await fn()
        } catch (error) {
          errors.push(error)
        }
      }
      if (errors.length) console.error(`[chaos] teardown of ${suite}: ${errors.length} error(s)`, errors)
    },
  }
  return rig
}

// ---------------------------------------------------------------------------------------
// The log, read straight from Postgres

export interface LogRow {
  session_id: string
  index: number
  id: string
  type: string
  payload: any
}

export async function sessionLog(sql: postgres.Sql, sessionId: string): Promise<LogRow[]> {
  return sql<LogRow[]>`select session_id, index, id, type, payload from a2_events where session_id = ${sessionId} order by index`
}

export async function allLogs(sql: postgres.Sql): Promise<Map<string, LogRow[]>> {
  const rows = await sql<LogRow[]>`select session_id, index, id, type, payload from a2_events order by session_id, index`
  const bySession = new Map<string, LogRow[]>()
  for (const row of rows) {
    let list = bySession.get(row.session_id)
    if (!list) bySession.set(row.session_id, (list = []))
    list.push(row)
  }
  return bySession
}

/** Indexes are 0, 1, 2, … with no gap and no duplicate; returns a description of the first problem. */
export function gapProblem(rows: LogRow[]): string | undefined {
  for (let i = 0; i < rows.length; i++) {
    if (rows[i].index !== i) return `expected index ${i}, found ${rows[i].index} (${rows[i].type} ${rows[i].id})`
  }
  return undefined
}

export interface JobRow {
  id: number
  status: string
  attempt: number
  owner: string | null
  event_id: string
  lease_until: Date | null
}

export async function generateJobs(sql: postgres.Sql, sessionId: string): Promise<JobRow[]> {
  return sql<JobRow[]>`select id::int as id, status, attempt, owner, event_id, lease_until from a2_jobs
                        where session_id = ${sessionId} and consumer = 'generate' order by event_index`
}

export async function transitions(sql: postgres.Sql, jobId: number): Promise<string[]> {
  const rows = await sql<{ attempt: number; from_status: string | null; to_status: string; reason: string }[]>`
    select attempt, from_status, to_status, reason from a2_job_transitions where job_id = ${jobId} order by id`
  return rows.map((r) => `${r.attempt}:${r.from_status ?? ''}>${r.to_status}:${r.reason}`)
}

// ---------------------------------------------------------------------------------------
// The upstream's deterministic answer and the browser's view of it

/** What the upstream streams for `tokens` tokens: `tok0 tok1 … tok<n-1> `. */
export const upstreamText = (tokens: number) => Array.from({ length: tokens }, (_, i) => `tok${i} `).join('')

export const normalize = (text: string) => text.replace(/\s+/g, ' ').trim()

/**
 * Installed with page.addInitScript: records every distinct text each answer showed, on every
 * DOM mutation, into window.__chaosSeen[answerId] (so a transient mix of two attempts that
 * lasts one frame is still caught).
 */
export function recordAnswerTexts(): void {
  const w = window as unknown as { __chaosSeen?: Record<string, string[]> }
  w.__chaosSeen = {}
  const sample = () => {
    for (const article of document.querySelectorAll('[data-testid="message-assistant"]')) {
      const id = article.getAttribute('data-answer-id') ?? '?'
      const text = (article.querySelector('[data-testid="answer-text"]')?.textContent ?? '').replace(/\s+/g, ' ').trim()
      const seen = (w.__chaosSeen![id] ??= [])
      if (seen[seen.length - 1] !== text) seen.push(text)
    }
  }
  new MutationObserver(sample).observe(document, { subtree: true, childList: true, characterData: true })
}

/**
 * For `test.afterEach`: when a test failed, print the tail of every process's output and
 * attach it to the report (the processes' own logs are what explain a chaos failure).
 * Playwright needs the fixtures argument destructured, hence `{}`.
 */
export function reportOnFailure(rig: () => Rig | undefined) {
  // eslint-disable-next-line no-empty-pattern
  return async ({}, testInfo: TestInfo) => {
    const current = rig()
    if (!current || testInfo.status === testInfo.expectedStatus) return
    const report = current.report(60)
    console.error(report)
    await testInfo.attach('processes', { body: report })
  }
}

/**
 * What every chaos suite does around its tests, called first in its describe block: skipped
 * (with the reason) without Postgres, its time budget, the processes' report attached when a
 * test fails, and the rig torn down after the last test.
 */
export function chaosSuiteHooks(timeoutMs: number, rig: () => Rig | undefined): void {
  test.skip(!BASE_DATABASE_URL, SKIP_REASON)
  test.describe.configure({ timeout: timeoutMs })
  test.afterEach(reportOnFailure(rig))
  test.afterAll(async () => {
    await rig()?.teardown()
  })
}
