/**
 * Figure 13 — the pages on a phone: Lighthouse's mobile preset (simulated throttling, Debian's
 * Chromium) on the production build (`next start` of this checkout's `.next`), beside a bare
 * Next.js page of the same next/react that renders three Q&A turns and a composer in the browser
 * (`bench/bare-page/`, built here when its build is missing or older than its source).
 *
 * Pages: the bare page; the home page for a new visitor; a chat of 3 finished answers opened by
 * its owner; a chat of 60 turns (30 questions, each answered with reasoning first, every third
 * through a `saveNote` tool call) opened by its owner. The chats are seeded through the app's own
 * API (identity cookie, pushes), answered by `scripts/upstream-server.ts`; the owner's page is
 * loaded with the identity cookie as a header. The pages alternate in each round, so all of them
 * run under the same load; each number is the median over the rounds.
 *
 * This machine's CPU is slower than the one Lighthouse's simulation assumes, so the bare page is
 * the yardstick, not the absolute score (the targets: within 5 points of it, TBT ≤ 1.5×).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { track } from '../lib/children'
import { until } from '../lib/time'

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium'
/** Where each run's whole Lighthouse result and its trace are kept (long tasks, bootup time, the profile), when set. */
const REPORTS_DIR = process.env.BENCH_LIGHTHOUSE_REPORTS
const ROOT = process.cwd()
const BARE_DIR = path.join(ROOT, 'bench', 'bare-page')
const NEXT_BIN = path.join(ROOT, 'node_modules', 'next', 'dist', 'bin', 'next')

export type PageName = 'bare' | 'home' | 'chat3' | 'chat60'

/** One Lighthouse run's numbers (ms, scores 0–100). */
export interface PageRun {
  perf: number
  tbt: number
  lcp: number
  tti: number
  mainThread: number
  a11y: number
  bestPractices: number
  /** Main-thread time by Lighthouse's groups (scriptEvaluation, styleLayout, …), ms. */
  breakdown: Record<string, number>
  /** Scripts by main-thread time (bootup-time), ms: the top few. */
  scripts: { url: string; total: number; scripting: number }[]
  transferKiB: number
  unusedJsKiB: number
  /** The audits that failed in the a11y and best-practices categories (their ids). */
  failed: string[]
}

export interface LighthouseFigure {
  rounds: number
  /** Each page's runs, in order. */
  pages: Record<PageName, PageRun[]>
  /** Each page's median of each number. */
  medians: Record<PageName, Omit<PageRun, 'scripts' | 'failed'> & { failed: string[] }>
  lighthouse: string
  chromium: string
  seedMs: number
  errors?: string
}

export const PAGE_LABELS: Record<PageName, string> = {
  bare: 'bare page',
  home: 'home, a new visitor',
  chat3: 'chat of 3 answers, its owner',
  chat60: 'chat of 60 turns (reasoning, tool calls), its owner',
}

export async function lighthouseFigure(opts: {
  rounds: number
  appPort: number
  barePort: number
  say: (line: string) => void
}): Promise<LighthouseFigure> {
  const distDir = process.env.A2_NEXT_DIST_DIR || '.next'
  const buildId = path.join(ROOT, distDir, 'BUILD_ID')
  if (!existsSync(buildId)) throw new Error(`no production build at ${distDir}/: run \`npx next build\` first`)
  const stale = newestSource(['app', 'components', 'lib'], statSync(buildId).mtimeMs)
  if (stale) opts.say(`WARNING: ${stale} is newer than the build (${distDir}/BUILD_ID): the figure measures the older build`)
  await buildBarePage(opts.say)

  const dataDir = mkdtempSync(path.join(tmpdir(), 'a2-bench-lh-'))
  const bareDataDir = mkdtempSync(path.join(tmpdir(), 'a2-bench-lh-bare-'))
  const upstream = await startUpstream({ tokenMs: 1, text: answerText })
  const processes: ChildProcess[] = []
  try {
    // Turbopack builds the repository's instrumentation.ts and proxy.ts (found at the workspace
    // root) into the bare page's server too: it starts with the app's environment and a database of
    // its own; its next.config.mjs adds the headers next.config.ts gives the app's responses. What
    // the phone loads and runs is the bare page's alone.
    processes.push(startNext(BARE_DIR, opts.barePort, appEnv(upstream, bareDataDir)))
    processes.push(startNext(ROOT, opts.appPort, appEnv(upstream, dataDir)))
    const app = `http://127.0.0.1:${opts.appPort}`
    const bare = `http://127.0.0.1:${opts.barePort}/`
    await Promise.all([serving(`${app}/api/sessions`), serving(bare)])

    const seedStart = Date.now()
    opts.say('13: seeding the chats through the app (3 answers; 30 questions with reasoning and tool calls)')
    const owner = await newIdentity(app)
    const chat3 = await seedChat(app, owner, 3, () => ({ reasons: false, tool: false }))
    const chat60 = await seedChat(app, owner, 30, (i) => ({ reasons: true, tool: i % 3 === 2 }))
    const seedMs = Date.now() - seedStart

    const targets: { name: PageName; url: string; cookie?: string }[] = [
      { name: 'bare', url: bare },
      { name: 'home', url: `${app}/` },
      { name: 'chat3', url: `${app}/c/${chat3}`, cookie: owner },
      { name: 'chat60', url: `${app}/c/${chat60}`, cookie: owner },
    ]
    const pages = { bare: [], home: [], chat3: [], chat60: [] } as Record<PageName, PageRun[]>
    let version = ''
    let chromium = ''
    const errors: string[] = []
    for (let round = 0; round < opts.rounds; round++) {
      for (const target of targets) {
        // Lighthouse's trace now and then misses the navigation (NO_NAVSTART) on this loaded machine: one more try.
        for (let attempt = 1; attempt <= 2; attempt++) {
          try {
            const { lhr, run, trace } = await lighthouseRun(target.url, target.cookie)
            if (REPORTS_DIR) {
              const name = path.join(REPORTS_DIR, `${target.name}-${round + 1}`)
              writeFileSync(`${name}.json`, JSON.stringify(lhr))
              // The trace the audits were computed from: Chromium's DevTools opens it (Performance panel).
              writeFileSync(`${name}.trace.json`, JSON.stringify(trace))
            }
            version = lhr.lighthouseVersion
            chromium = lhr.environment.hostUserAgent.match(/Chrome\/[\d.]+/)?.[0] ?? lhr.environment.hostUserAgent
            pages[target.name].push(run)
            opts.say(
              `13 round ${round + 1} ${target.name}: perf ${run.perf}, TBT ${Math.round(run.tbt)} ms, LCP ${Math.round(run.lcp)} ms, ` +
                `main thread ${Math.round(run.mainThread)} ms, a11y ${run.a11y}, best practices ${run.bestPractices}`,
            )
            break
          } catch (error) {
            const message = `${target.name} round ${round + 1} attempt ${attempt}: ${error instanceof Error ? error.message : String(error)}`
            opts.say(`13 FAILED ${message}`)
            if (attempt === 2) errors.push(message)
          }
        }
      }
    }
    return {
      rounds: opts.rounds,
      pages,
      medians: Object.fromEntries(Object.entries(pages).map(([name, runs]) => [name, medianRun(runs)])) as LighthouseFigure['medians'],
      lighthouse: version,
      chromium,
      seedMs,
      ...(errors.length ? { errors: errors.join('; ') } : {}),
    }
  } finally {
    for (const p of processes) p.kill('SIGKILL')
    await upstream.close()
    for (const dir of [dataDir, bareDataDir]) rmSync(dir, { recursive: true, force: true })
  }
}

/** One Lighthouse run in a browser of its own (no cache, no compiled code carried from the previous page). */
async function lighthouseRun(url: string, cookie: string | undefined): Promise<{ lhr: Lhr; run: PageRun; trace: unknown }> {
  const { default: lighthouse } = await import('lighthouse')
  const { launch } = await import('chrome-launcher')
  const chrome = await launch({ chromePath: CHROMIUM, chromeFlags: ['--headless=new', '--no-sandbox', '--disable-gpu'] })
  try {
    const result = await lighthouse(url, {
      port: chrome.port,
      output: 'json',
      logLevel: 'error',
      onlyCategories: ['performance', 'accessibility', 'best-practices'],
      ...(cookie ? { extraHeaders: { Cookie: cookie } } : {}),
    })
    const lhr = result?.lhr as Lhr | undefined
    if (!lhr) throw new Error('no result')
    if (lhr.runtimeError) throw new Error(`${lhr.runtimeError.code}: ${lhr.runtimeError.message}`)
    return { lhr, run: pageRun(lhr), trace: result?.artifacts.Trace }
  } finally {
    chrome.kill()
  }
}

// --- the pages' numbers ---------------------------------------------------------------------

// Lighthouse's result types are its own (lighthouse/types/lhr); only these fields are read.
type Lhr = {
  lighthouseVersion: string
  environment: { hostUserAgent: string }
  runtimeError?: { code: string; message: string }
  categories: Record<string, { score: number | null; auditRefs: { id: string; weight: number }[] }>
  audits: Record<string, { score: number | null; numericValue?: number; details?: any }>
}

function pageRun(lhr: Lhr): PageRun {
  const score = (c: string) => Math.round((lhr.categories[c]?.score ?? 0) * 100)
  const value = (a: string) => lhr.audits[a]?.numericValue ?? NaN
  const breakdown: Record<string, number> = {}
  for (const item of lhr.audits['mainthread-work-breakdown']?.details?.items ?? []) breakdown[item.groupLabel ?? item.group] = item.duration
  const scripts = ((lhr.audits['bootup-time']?.details?.items ?? []) as { url: string; total: number; scripting: number }[])
    .slice(0, 5)
    .map(({ url, total, scripting }) => ({ url: url.replace(/^https?:\/\/[^/]+/, ''), total, scripting }))
  const failed = ['accessibility', 'best-practices'].flatMap((c) =>
    (lhr.categories[c]?.auditRefs ?? [])
      .filter((r) => r.weight > 0 && lhr.audits[r.id]?.score !== null && (lhr.audits[r.id]?.score ?? 1) < 1)
      .map((r) => r.id),
  )
  return {
    perf: score('performance'),
    tbt: value('total-blocking-time'),
    lcp: value('largest-contentful-paint'),
    tti: value('interactive'),
    mainThread: value('mainthread-work-breakdown'),
    a11y: score('accessibility'),
    bestPractices: score('best-practices'),
    breakdown,
    scripts,
    transferKiB: value('total-byte-weight') / 1024,
    unusedJsKiB: (lhr.audits['unused-javascript']?.details?.overallSavingsBytes ?? 0) / 1024,
    failed,
  }
}

function median(values: number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (!sorted.length) return NaN
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

function medianRun(runs: PageRun[]): LighthouseFigure['medians'][PageName] {
  const of = (k: keyof PageRun) => median(runs.map((r) => r[k] as number))
  const groups = [...new Set(runs.flatMap((r) => Object.keys(r.breakdown)))]
  return {
    perf: of('perf'),
    tbt: of('tbt'),
    lcp: of('lcp'),
    tti: of('tti'),
    mainThread: of('mainThread'),
    a11y: of('a11y'),
    bestPractices: of('bestPractices'),
    breakdown: Object.fromEntries(groups.map((g) => [g, median(runs.map((r) => r.breakdown[g] ?? 0))])),
    transferKiB: of('transferKiB'),
    unusedJsKiB: of('unusedJsKiB'),
    failed: [...new Set(runs.flatMap((r) => r.failed))],
  }
}

// --- the servers ------------------------------------------------------------------------------

export function appEnv(upstream: Upstream, dataDir: string): Record<string, string> {
  return {
    A2_DATA_DIR: dataDir,
    A2_MODELS: JSON.stringify([
      { id: 'bench-model', label: 'Bench model', provider: 'openai', baseURL: upstream.url, apiKey: 'bench', reasoning: true, tools: true },
    ]),
    AUTH_SECRET: 'bench-lighthouse-secret-0123456789abcdef0123',
    A2_RATE_PUSHES_PER_MIN: '10000',
    A2_RATE_GENERATIONS_PER_MIN: '10000',
    A2_RATE_IDENTITIES_PER_MIN_PER_ADDRESS: '10000',
    A2_RATE_PUSHES_PER_MIN_PER_ADDRESS: '10000',
    A2_RATE_GENERATIONS_PER_MIN_PER_ADDRESS: '10000',
  }
}

// From the repository's root, as the app runs (its migrations are read from there).
export function startNext(dir: string, port: number, env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, [NEXT_BIN, 'start', dir, '-p', String(port), '-H', '127.0.0.1'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: '', NEXT_TELEMETRY_DISABLED: '1', NEXT_MANUAL_SIG_HANDLE: 'true', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  track(child)
  return child
}

export async function serving(url: string): Promise<void> {
  await until(
    async () => {
      try {
        const response = await fetch(url)
        await response.arrayBuffer()
        return response.status < 500
      } catch {
        return false
      }
    },
    120_000,
    `${url} to answer`,
    250,
  )
}

async function buildBarePage(say: (line: string) => void): Promise<void> {
  const built = path.join(BARE_DIR, '.next', 'BUILD_ID')
  if (existsSync(built) && !newestSource([BARE_DIR], statSync(built).mtimeMs)) return
  say('13: building the bare page (bench/bare-page)')
  const child = spawn(process.execPath, [NEXT_BIN, 'build'], {
    cwd: BARE_DIR,
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  track(child)
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  if (code !== 0) throw new Error(`building the bare page exited ${code}`)
}

/** The first file under `dirs` modified after `since` (ms), if any. */
function newestSource(dirs: string[], since: number): string | undefined {
  for (const dir of dirs) {
    const abs = path.resolve(ROOT, dir)
    if (!existsSync(abs)) continue
    for (const entry of readdirSync(abs, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || entry.parentPath.includes(`${path.sep}.next`)) continue
      const file = path.join(entry.parentPath, entry.name)
      if (statSync(file).mtimeMs > since) return path.relative(ROOT, file)
    }
  }
  return undefined
}

// --- seeding through the app's API ----------------------------------------------------------

/** An answer of the size and shape a chat model writes: paragraphs, a list, code. */
function answerText(): string {
  return [
    'Here is the **short answer**: a durable log orders every event, so a Stop lands in one place.',
    '',
    '- the browser appends the Stop',
    '- the worker sees it and closes the request',
    '- the page folds the same events',
    '',
    '```ts',
    "const stop = await push({ type: 'cancelled' })",
    '```',
    '',
    'That is all it takes; the rest is bookkeeping that the reader never sees.',
  ].join('\n')
}

export async function newIdentity(app: string): Promise<string> {
  const response = await fetch(`${app}/api/sessions`, { headers: { 'sec-fetch-site': 'same-origin' } })
  const setCookie = response.headers.get('set-cookie')
  await response.arrayBuffer()
  if (!setCookie) throw new Error(`no identity was created: ${response.status}`)
  return setCookie.split(';')[0]
}

/** A chat of `questions` answered questions, asked one after the other; returns its id. */
export async function seedChat(
  app: string,
  cookie: string,
  questions: number,
  shape: (i: number) => { reasons: boolean; tool: boolean },
): Promise<string> {
  const headers = { origin: app, 'sec-fetch-site': 'same-origin', cookie, 'content-type': 'application/json' }
  const created = await fetch(`${app}/api/sessions`, { method: 'POST', headers, body: '{}' })
  if (created.status !== 201) throw new Error(`creating a chat answered ${created.status}: ${await created.text()}`)
  const { session } = (await created.json()) as { session: { id: string } }
  let after: string | undefined
  for (let i = 0; i < questions; i++) {
    const { reasons, tool } = shape(i)
    const text =
      `Question ${i + 1}: how does Stop reach the model?` +
      (reasons ? ' [[reasons]]' : '') +
      (tool ? ` [[call saveNote {"note":"question ${i + 1}"}]]` : '')
    const pushed = await fetch(`${app}/api/sessions/${session.id}/events`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        events: [
          { id: `m${i}`, type: 'message', payload: { text, ...(after ? { after } : {}) } },
          { id: `g${i}`, type: 'generate', payload: { for: `m${i}` } },
        ],
      }),
    })
    if (pushed.status !== 201) throw new Error(`question ${i + 1} answered ${pushed.status}: ${await pushed.text()}`)
    await pushed.arrayBuffer()
    after = `g${i}`
    await until(() => finished(app, cookie, session.id), 60_000, `answer ${i + 1} of chat ${session.id}`, 50)
  }
  return session.id
}

async function finished(app: string, cookie: string, sessionId: string): Promise<boolean> {
  const response = await fetch(`${app}/api/sessions`, { headers: { cookie, 'sec-fetch-site': 'same-origin' } })
  const { sessions } = (await response.json()) as { sessions: { id: string; generating: boolean }[] }
  return sessions.some((s) => s.id === sessionId && !s.generating)
}
