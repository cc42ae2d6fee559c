/**
 * Diagnostic (`npx tsx bench/diagnostics/stop-push-statements.ts`): the statements a Stop
 * sends to the database through the app's push route, and the route's own time with nothing
 * else running (median of N Stops, each cancelling a queued answer). Statements are counted
 * by Postgres itself (log_statement=all on a throw-away database, read back from the server
 * log), so nothing in the driver is patched.
 */
import { readFileSync, statSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import postgres from 'postgres'
import { loadRoutes } from '@/test/routes'
import { createBenchDb, ADMIN_URL } from '../lib/db'
import { summarize } from '../lib/stats'

const LOG = process.env.PG_LOG ?? '/var/log/postgresql/postgresql-15-main.log'
const db = await createBenchDb()
const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
const routes = await loadRoutes({ databaseUrl: db.url, env: { OPENAI_API_KEY: 'bench', OPENAI_MODEL: 'bench' } })

async function stopOnce(trace: boolean): Promise<{ ms: number; statements: string[] }> {
  const user = await routes.newUser()
  const body = {
    events: [
      { id: 'm', type: 'message', payload: { text: 'hi' } },
      { id: 'g', type: 'generate', payload: { for: 'm' } },
    ],
  }
  const started = await routes.push(user.sessionId, user.cookie, JSON.stringify(body))
  if (started.status !== 201) throw new Error(`push answered ${started.status}`)
  const from = trace ? statSync(LOG).size : 0
  const t0 = performance.now()
  const stopped = await routes.push(
    user.sessionId,
    user.cookie,
    JSON.stringify({ id: 'c', type: 'cancelled', payload: { of: 'g', lastSeenIndex: 1 } }),
  )
  const ms = performance.now() - t0
  if (stopped.status !== 201) throw new Error(`Stop answered ${stopped.status}: ${await stopped.text()}`)
  if (!trace) return { ms, statements: [] }
  await new Promise((r) => setTimeout(r, 200)) // the server log is written asynchronously
  const lines = readFileSync(LOG).subarray(from).toString().split('\n')
  const statements = lines.filter((l) => /LOG:\s+(statement|execute [^:]*):/.test(l)).map((l) => l.replace(/^.*?LOG:\s+/, '').slice(0, 110))
  return { ms, statements }
}

try {
  for (let i = 0; i < 20; i++) await stopOnce(false) // warm-up
  const times: number[] = []
  for (let i = 0; i < 200; i++) times.push((await stopOnce(false)).ms)
  await admin.unsafe(`alter database "${db.name}" set log_statement = 'all'`)
  await routes.chatServer.shutdownChatServer() // new connections pick the setting up
  await stopOnce(false)
  const { statements } = await stopOnce(true)
  await admin.unsafe(`alter database "${db.name}" reset log_statement`)
  console.log(`Stop through the push route, idle: ${JSON.stringify(summarize(times))} ms`)
  console.log(`${statements.length} statements:`)
  for (const s of statements) console.log(`  ${s}`)
} finally {
  await routes.chatServer.shutdownChatServer()
  await admin.end()
  await db.drop()
}
