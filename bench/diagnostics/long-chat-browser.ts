/**
 * A long chat opened in a real browser: the built app (`next start`, run `npx next build`
 * first) on a fresh Postgres database, a chat of ANSWERS answers (22 events each) written
 * straight into its log, then Chromium opening /c/<id> ROUNDS times, each beside an open of a
 * chat of one answer (the baseline). Reports, per open, navigation → the newest answer's text
 * on screen, and the turns rendered.
 *
 *   npx tsx bench/diagnostics/long-chat-browser.ts [answers=4500] [rounds=3]
 */
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import postgres from 'postgres'
import { chromium } from '@playwright/test'
import { chromiumLaunchOptions } from '../../e2e/chromium'
import { openPostgresStore } from '@/lib/a2/server'
import { seedLongHistory } from '@/test/long-history'
import { migrateDatabase } from '@/lib/store/migrate'
import { withDatabase } from '@/test/db'

const ANSWERS = Number(process.argv[2] ?? 4500)
const ROUNDS = Number(process.argv[3] ?? 3)
const BASE = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'
const PORT = 3391

async function main(): Promise<void> {
  const name = `a2_longchat_${randomUUID().replaceAll('-', '').slice(0, 12)}`
  const admin = postgres(BASE, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  const url = withDatabase(BASE, name)
  const store = await openPostgresStore(url)
  await migrateDatabase(store)
  const app = spawn('npx', ['next', 'start', '-p', String(PORT), '-H', '127.0.0.1'], {
    env: { ...process.env, DATABASE_URL: url, AUTH_SECRET: 'diagnostic-secret-0123456789abcdef0123456789', NEXT_TELEMETRY_DISABLED: '1' },
    stdio: 'ignore',
    detached: true,
  })
  const browser = await chromium.launch(chromiumLaunchOptions)
  try {
    for (let i = 0; ; i++) {
      const ok = await fetch(`http://127.0.0.1:${PORT}/api/sessions`).then(
        (r) => r.status < 500,
        () => false,
      )
      if (ok) break
      if (i > 600) throw new Error('app did not start')
      await new Promise((r) => setTimeout(r, 100))
    }
    const context = await browser.newContext({ baseURL: `http://127.0.0.1:${PORT}` })
    const page = await context.newPage()
    await page.goto('/')
    const create = () =>
      page.evaluate(async () => {
        const res = await fetch('/api/sessions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
        return ((await res.json()) as { session: { id: string } }).session
      })
    const long = await create()
    const chats = {
      short: { id: (await create()).id, answers: 1 },
      long: { id: long.id, answers: ANSWERS },
    }
    const last: Record<string, string> = {}
    for (const [label, chat] of Object.entries(chats)) last[label] = (await seedLongHistory(store, chat.id, { answers: chat.answers })).lastAnswer!
    console.log(`chat of ${ANSWERS} answers (${ANSWERS * 22} events) beside a chat of one answer`)
    for (let round = 0; round < ROUNDS; round++) {
      for (const [label, chat] of Object.entries(chats)) {
        const started = Date.now()
        await page.goto(`/c/${chat.id}`)
        await page.locator(`[data-answer-id="${last[label]}"] [data-testid="answer-text"]`).waitFor({ state: 'visible', timeout: 120_000 })
        const ms = Date.now() - started
        const items = await page.locator('ol[aria-label="Conversation"] > li').count()
        const snapshot = await page.evaluate(() => {
          const entry = performance.getEntriesByType('resource').find((e) => e.name.includes('/snapshot')) as PerformanceResourceTiming | undefined
          return (
            entry && {
              requestToEnd: entry.responseEnd - entry.requestStart,
              download: entry.responseEnd - entry.responseStart,
              bytes: entry.decodedBodySize,
            }
          )
        })
        const detail = snapshot
          ? `snapshot ${(snapshot.bytes / 1024).toFixed(0)} KiB, request → end ${snapshot.requestToEnd.toFixed(0)} ms (body ${snapshot.download.toFixed(0)} ms)`
          : 'no snapshot timing'
        console.log(`round ${round + 1} ${label}: newest answer on screen after ${ms} ms; ${items} turns rendered; ${detail}`)
      }
    }
  } finally {
    await browser.close()
    if (app.pid) process.kill(-app.pid, 'SIGTERM')
    await store.close()
    await admin.unsafe(`drop database if exists ${name} with (force)`)
    await admin.end()
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  },
)
