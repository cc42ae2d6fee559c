/**
 * A leak guard for runtime test files. Create it before anything starts, register what
 * the file starts (servers, workers, child processes, stores), and call `check()` in
 * afterAll once the workers are stopped: it fails the file if anything is left behind —
 *
 *  - a worker still running attempts (`activeCount`), or a live bus subscription
 *    (`server.subscriptions()`: workers, SSE tails);
 *  - a timer or interval created by lib/a2 code that was neither fired nor cleared
 *    (timers are tracked from creation, ref'd or not: an unref'd timer is still a leak);
 *  - a child process still alive;
 *  - on Postgres, a connection to the file's database after its stores were closed
 *    (`pg_stat_activity`), and sockets this process still holds (`getActiveResourcesInfo`).
 */
import type { ChildProcess } from 'node:child_process'
import postgres from 'postgres'
import type { Store } from '@/lib/a2/server'

interface Tracked {
  kind: 'timeout' | 'interval'
  site: string
}

interface ServerLike {
  subscriptions(): Promise<number>
}
interface WorkerLike {
  readonly activeCount: number
}

const A2_SOURCE = /[\\/]lib[\\/]a2[\\/]/

export interface LeakGuard {
  server<S extends ServerLike>(server: S): S
  worker<W extends WorkerLike>(worker: W): W
  child<P extends ChildProcess>(child: P): P
  store<S extends Store>(store: S): S
  /** a2 timers that are still pending (for diagnostics). */
  pendingTimers(): string[]
  /**
   * Call after stopping workers and killing children. Closes the registered stores when
   * `closeStores` is set (then checks Postgres connections to `database`), restores the timer
   * functions, and throws one error listing every leak.
   */
  check(options?: { closeStores?: boolean; postgresUrl?: string; database?: string; settleMs?: number }): Promise<void>
}

export function createLeakGuard(): LeakGuard {
  const servers: ServerLike[] = []
  const workers: WorkerLike[] = []
  const children: ChildProcess[] = []
  const stores: Store[] = []
  const pending = new Map<unknown, Tracked>()
  const baseline = countResources()

  const original = {
    setTimeout: globalThis.setTimeout,
    setInterval: globalThis.setInterval,
    clearTimeout: globalThis.clearTimeout,
    clearInterval: globalThis.clearInterval,
  }
  const callSite = (): string | undefined => {
    // [0] "Error", [1] this function, [2] the wrapper, [3] whoever called setTimeout.
    const line = new Error().stack?.split('\n')[3] ?? ''
    return A2_SOURCE.test(line) && !line.includes('node_modules') ? line.trim() : undefined
  }
  const patched = {
    setTimeout(fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) {
      const site = callSite()
      if (!site) return original.setTimeout(fn, ms, ...args)
      const handle: unknown = original.setTimeout(
        (...a: unknown[]) => {
          pending.delete(handle)
          fn(...a)
        },
        ms,
        ...args,
      )
      pending.set(handle, { kind: 'timeout', site })
      return handle
    },
    setInterval(fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) {
      const site = callSite()
      const handle = original.setInterval(fn, ms, ...args)
      if (site) pending.set(handle, { kind: 'interval', site })
      return handle
    },
    clearTimeout(handle: unknown) {
      pending.delete(handle)
      original.clearTimeout(handle as never)
    },
    clearInterval(handle: unknown) {
      pending.delete(handle)
      original.clearInterval(handle as never)
    },
  }
  Object.assign(globalThis, patched)
  const restore = () => Object.assign(globalThis, original)

  const pendingTimers = () => [...pending.values()].map((t) => `${t.kind} from ${t.site}`)

  return {
    server(server) {
      servers.push(server)
      return server
    },
    worker(worker) {
      workers.push(worker)
      return worker
    },
    child(child) {
      children.push(child)
      return child
    },
    store(store) {
      stores.push(store)
      return store
    },
    pendingTimers,
    async check(options = {}) {
      const leaks: string[] = []
      try {
        for (const [i, w] of workers.entries()) {
          if (w.activeCount !== 0) leaks.push(`worker #${i} still runs ${w.activeCount} attempt(s)`)
        }
        for (const [i, s] of servers.entries()) {
          const n = await s.subscriptions()
          if (n !== 0) leaks.push(`server #${i} holds ${n} bus subscription(s)`)
        }
        // Timers fire or are cleared shortly after a stop; give them a bounded moment.
        const until = Date.now() + (options.settleMs ?? 1_000)
        while (pending.size > 0 && Date.now() < until) await new Promise((r) => original.setTimeout(r, 20))
        for (const t of pendingTimers()) leaks.push(`a2 ${t} never fired nor was cleared`)
        for (const child of children) {
          if (child.exitCode === null && child.signalCode === null) leaks.push(`child process ${child.pid} is still alive`)
        }
        if (options.closeStores) {
          await Promise.allSettled(stores.map((s) => s.close()))
          if (options.postgresUrl && options.database) {
            const open = await connectionsTo(options.postgresUrl, options.database)
            if (open > 0) leaks.push(`${open} connection(s) to ${options.database} are still open after its stores closed`)
          }
          const deadline = Date.now() + 2_000
          let now = countResources()
          while (now.TCPSocketWrap > baseline.TCPSocketWrap && Date.now() < deadline) {
            await new Promise((r) => original.setTimeout(r, 20))
            now = countResources()
          }
          if (now.TCPSocketWrap > baseline.TCPSocketWrap) {
            leaks.push(`${now.TCPSocketWrap - baseline.TCPSocketWrap} TCP socket(s) left open by this file`)
          }
        }
      } finally {
        restore()
      }
      if (leaks.length > 0) throw new Error(`leak guard:\n  ${leaks.join('\n  ')}`)
    },
  }
}

function countResources(): Record<string, number> {
  const counts: Record<string, number> = { TCPSocketWrap: 0 }
  for (const name of process.getActiveResourcesInfo()) counts[name] = (counts[name] ?? 0) + 1
  return counts
}

/** Backends connected to `database`, seen from an admin connection to the server. */
export async function connectionsTo(postgresUrl: string, database: string): Promise<number> {
  const admin = postgres(postgresUrl, { max: 1, onnotice: () => {} })
  try {
    // A closed client's backends disappear asynchronously; wait a bounded moment.
    const deadline = Date.now() + 3_000
    for (;;) {
      const [{ n }] = await admin<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where datname = ${database} and pid <> pg_backend_pid()`
      if (n === 0 || Date.now() > deadline) return n
      await new Promise((r) => setTimeout(r, 50))
    }
  } finally {
    await admin.end({ timeout: 2 })
  }
}
