/**
 * A profiler for the database side: samples pg_stat_activity of the bench database every
 * few ms from its own connection and counts what each backend was doing — running, idle
 * in a transaction (waiting on its client), waiting on a lock (which one), on I/O — per
 * application (the bench parent, the worker child). A backend the pool leaves idle counts
 * as idle. Postgres only.
 */
import postgres from 'postgres'

export interface DbSample {
  samples: number
  /** Per application: average number of backends in each state (e.g. "active", "Lock:object", "idle in transaction"). */
  byApp: Record<string, Record<string, number>>
  /** The statements most often seen running or waiting (top 8), with the average backends on each. */
  topStatements: Array<{ query: string; avg: number }>
}

export function sampleDatabase(url: string, everyMs = 10): { stop(): Promise<DbSample> } {
  const client = postgres(url, { max: 1, onnotice: () => {}, connection: { application_name: 'a2-bench-sampler' } })
  const counts = new Map<string, Map<string, number>>()
  const statements = new Map<string, number>()
  let samples = 0
  let running = true
  const loop = (async () => {
    while (running) {
      try {
        const rows = await client`
          select application_name as app, state, wait_event_type as wtype, wait_event as wevent, left(regexp_replace(query, '\\s+', ' ', 'g'), 70) as q
          from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`
        samples++
        for (const r of rows) {
          const state =
            r.state === 'active'
              ? r.wtype
                ? `wait ${r.wtype}:${r.wevent}`
                : 'active (on CPU)'
              : r.state === 'idle' && r.wtype === 'Client'
                ? 'idle'
                : (r.state as string)
          const app = (r.app as string) || '?'
          const m = counts.get(app) ?? new Map<string, number>()
          m.set(state, (m.get(state) ?? 0) + 1)
          counts.set(app, m)
          if (r.state !== 'idle') statements.set(`${state} | ${r.q}`, (statements.get(`${state} | ${r.q}`) ?? 0) + 1)
        }
      } catch {
        // a failed sample is skipped
      }
      await new Promise((resolve) => setTimeout(resolve, everyMs))
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      await client.end({ timeout: 1 })
      const byApp: DbSample['byApp'] = {}
      for (const [app, m] of counts) {
        byApp[app] = Object.fromEntries([...m].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, Math.round((100 * v) / Math.max(1, samples)) / 100]))
      }
      const topStatements = [...statements]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 8)
        .map(([query, n]) => ({ query, avg: Math.round((100 * n) / Math.max(1, samples)) / 100 }))
      return { samples, byApp, topStatements }
    },
  }
}
