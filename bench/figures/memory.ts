/**
 * Figure 5 — Memory per open SSE stream: RSS and heap growth of a server process (after
 * GC, --expose-gc) holding 1,000 idle SSE connections, each a `server.tail()` served by
 * `sseResponse` — the app's GET route. Baseline: the same process holding 1,000 idle
 * plain HTTP keep-alive connections. Also measured while idle: the server's CPU and the
 * statements/s the idle tails cost (counted in the server process), and that closing every connection
 * leaves no bus subscription behind.
 */
import http from 'node:http'
import { sql } from 'drizzle-orm'
import type { Store } from '@/lib/a2/server'
import { OWNER, openSse, type SseClient } from '../lib/http'
import { spawnChild } from '../lib/children'
import { sleep } from '../lib/time'

interface Mem {
  rss: number
  heapUsed: number
  heapTotal: number
  external: number
  arrayBuffers: number
  connections: number
  subscriptions: number
}

export interface MemoryMode {
  connections: number
  perConnection: { rssKiB: number; heapKiB: number }
  before: Mem
  open: Mem
  closed?: Mem
  idleCpuPct: number
  idleStatementsPerSec: number
}

export interface MemoryFigure {
  ours: MemoryMode
  baseline: MemoryMode
}

const IDLE_WINDOW_MS = 4_000

async function measureMode(mode: 'a2' | 'plain', count: number, dbUrl: string | undefined): Promise<MemoryMode> {
  const child = await spawnChild('memory-child.ts', [mode], {
    env: { ...(dbUrl ? { BENCH_DB_URL: dbUrl } : {}), BENCH_SESSIONS: String(count) },
    execArgv: ['--expose-gc'],
  })
  const base: string = child.ready.url
  const clients: SseClient[] = []
  // One agent per connection, so each keeps its own socket alive and idle.
  const agents: http.Agent[] = []
  try {
    const before = await child.call<Mem>({ cmd: 'measure' })
    for (let i = 0; i < count; i += 100) {
      const wave = Array.from({ length: Math.min(100, count - i) }, (_, k) => i + k)
      if (mode === 'a2') {
        const opened = wave.map((n) => {
          const client = openSse(`${base}/a2/mem-${n}?after=-1`, () => {})
          clients.push(client)
          return client.opened
        })
        await Promise.all(opened)
      } else {
        await Promise.all(
          wave.map(
            (n) =>
              new Promise<void>((resolve, reject) => {
                const agent = new http.Agent({ keepAlive: true, maxSockets: 1, timeout: 0 })
                agents.push(agent)
                http
                  .get(`${base}/ping?n=${n}`, { agent }, (res) => {
                    res.resume()
                    res.on('end', resolve)
                  })
                  .on('error', reject)
              }),
          ),
        )
      }
    }
    await sleep(1_000)
    const open = await child.call<Mem>({ cmd: 'measure' })
    if (open.connections < count) throw new Error(`only ${open.connections} of ${count} connections are open`)
    // Idle cost: nothing is appended; whatever the server does now is the price of waiting.
    await child.call({ cmd: 'cpu' })
    const statements0 = await child.call<number>({ cmd: 'statements' })
    await sleep(IDLE_WINDOW_MS)
    const idleCpuPct = await child.call<number>({ cmd: 'cpu' })
    const statements1 = await child.call<number>({ cmd: 'statements' })
    for (const client of clients) client.close()
    for (const agent of agents) agent.destroy()
    await sleep(500)
    const closed = await child.call<Mem>({ cmd: 'measure' })
    return {
      connections: open.connections,
      perConnection: {
        rssKiB: (open.rss - before.rss) / count / 1024,
        heapKiB: (open.heapUsed - before.heapUsed) / count / 1024,
      },
      before,
      open,
      closed,
      idleCpuPct,
      // Counted where they are sent: pg_stat_database's counters lag by up to 10 s (an idle
      // backend flushes its statistics that late), which once put the sessions' set-up here.
      idleStatementsPerSec: ((statements1 - statements0) * 1000) / IDLE_WINDOW_MS,
    }
  } finally {
    for (const client of clients) client.close()
    for (const agent of agents) agent.destroy()
    await child.stop()
  }
}

export async function memoryFigure(options: { connections: number; dbUrl?: string; store?: Store }): Promise<MemoryFigure> {
  if (options.store?.kind === 'postgres') {
    await options.store.db.execute(
      sql.raw(
        `insert into a2_sessions (id, owner) select 'mem-' || g, '${OWNER}' from generate_series(0, ${options.connections - 1}) g on conflict do nothing`,
      ),
    )
  }
  const baseline = await measureMode('plain', options.connections, options.dbUrl)
  const ours = await measureMode('a2', options.connections, options.dbUrl)
  return { ours, baseline }
}
