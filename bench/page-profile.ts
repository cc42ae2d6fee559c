/**
 * The names behind figure 13's long tasks: the same pages (home, a chat of 3 answers, one of 60
 * turns, seeded as the figure seeds them) loaded in Debian's Chromium with its CPU slowed 4×
 * (DevTools' throttling, where Lighthouse simulates it), each with a V8 CPU profile of its first
 * 12 s and the long tasks the page itself observed.
 *
 *   A2_NEXT_DIST_DIR=.next-prof npx next build --no-mangling   # names, not mangled ones
 *   npx tsx bench/page-profile.ts [--dist=.next-prof] [--out=/tmp]
 *
 * Writes `<out>/page-<name>.cpuprofile` (open it in Chromium's DevTools, Performance panel) and
 * prints each page's long tasks (start, duration in ms) and their time over 50 ms. A profile of
 * one run on a shared machine: read it for where the time goes, and figure 13 for how much.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { chromium } from 'playwright'
import { startUpstream } from '@/scripts/upstream-server'
import { appEnv, newIdentity, seedChat, serving, startNext } from './figures/lighthouse'

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const dist = arg('dist', '.next-prof')
const out = arg('out', tmpdir())
const port = Number(process.env.BENCH_PROFILE_PORT || 3310)
const CPU_SLOWDOWN = 4 // Lighthouse's mobile preset

const upstream = await startUpstream({ tokenMs: 1, text: () => 'Stop is an event. '.repeat(40) + '\n\n- one\n- two\n\n```ts\nconst a = 1\n```\n' })
const dataDir = mkdtempSync(path.join(tmpdir(), 'a2-page-profile-'))
const app = `http://127.0.0.1:${port}`
const server = startNext(process.cwd(), port, { ...appEnv(upstream, dataDir), A2_NEXT_DIST_DIR: dist })
try {
  await serving(`${app}/api/sessions`)
  const owner = await newIdentity(app)
  const chat3 = await seedChat(app, owner, 3, () => ({ reasons: false, tool: false }))
  const chat60 = await seedChat(app, owner, 30, (i) => ({ reasons: true, tool: i % 3 === 2 }))
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium', args: ['--no-sandbox'] })
  const pages = [
    ['home', `${app}/`],
    ['chat3', `${app}/c/${chat3}`],
    ['chat60', `${app}/c/${chat60}`],
  ] as const
  for (const [name, url] of pages) {
    const context = await browser.newContext({ extraHTTPHeaders: { cookie: owner } })
    const page = await context.newPage()
    const cdp = await context.newCDPSession(page)
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: CPU_SLOWDOWN })
    await cdp.send('Profiler.enable')
    await cdp.send('Profiler.setSamplingInterval', { interval: 200 })
    await page.addInitScript(() => {
      const seen: [number, number][] = []
      ;(window as unknown as { __longTasks: [number, number][] }).__longTasks = seen
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) seen.push([Math.round(e.startTime), Math.round(e.duration)])
      }).observe({ type: 'longtask', buffered: true })
    })
    await cdp.send('Profiler.start')
    await page.goto(url)
    await page.waitForTimeout(12_000) // what loads and runs in the page's first 12 s, whatever it is
    const { profile } = await cdp.send('Profiler.stop')
    const long = await page.evaluate(() => (window as unknown as { __longTasks: [number, number][] }).__longTasks)
    const file = path.join(out, `page-${name}.cpuprofile`)
    writeFileSync(file, JSON.stringify(profile))
    const over = long.reduce((sum, [, ms]) => sum + Math.max(0, ms - 50), 0)
    console.log(`${name}: long tasks ${JSON.stringify(long)}; time over 50 ms ${over} ms; profile ${file}`)
    await context.close()
  }
  await browser.close()
} finally {
  server.kill('SIGKILL')
  await upstream.close()
  rmSync(dataDir, { recursive: true, force: true })
}
