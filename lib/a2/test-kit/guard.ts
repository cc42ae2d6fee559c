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
import { waitUntil } from './runtime'

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
  /** Resolves once an a2 timer is pending (at once if one is); rejects after `timeoutMs`. */
  timerPending(timeoutMs?: number): Promise<void>
  /**
   * Call after stopping workers and killing children. Closes the registered stores when
   * `closeStores` is set (then checks Postgres connections to `database`), restores the timer
   * functions, and throws one error listing every leak.
   */
  check(options?: { closeStores?: boolean; postgresUrl?: string; database?: string; settleMs?: number }): Promise<void>
}

/** Resolves when `holds()` is true, rechecked each time `onChange` fires; false after `timeoutMs` (never rejects). */
function whenHolds(
  holds: () => boolean,
  onChange: Set<() => void>,
  timeoutMs: number,
  setTimer: typeof setTimeout,
  clearTimer: typeof clearTimeout,
): Promise<boolean> {
  if (holds()) return Promise.resolve(true)
  return new Promise((resolve) => {
    const check = () => {
      if (!holds()) return
      done(true)
    }
    const done = (held: boolean) => {
      clearTimer(timer)
      onChange.delete(check)
      resolve(held)
    }
    const timer = setTimer(() => done(false), timeoutMs)
    onChange.add(check)
  })
}

export function createLeakGuard(): LeakGuard {
  const servers: ServerLike[] = []
  const workers: WorkerLike[] = []
  const children: ChildProcess[] = []
  const stores: Store[] = []
  const pending = new Map<unknown, Tracked>()
  /** Called whenever an a2 timer is created, fires or is cleared: what the waits below wake on. */
  const timersChanged = new Set<() => void>()
  const changed = () => {
    for (const listener of [...timersChanged]) listener()
  }
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
          changed()
          fn(...a)
        },
        ms,
        ...args,
      )
      pending.set(handle, { kind: 'timeout', site })
      changed()
      return handle
    },
    setInterval(fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) {
      const site = callSite()
      const handle = original.setInterval(fn, ms, ...args)
      if (site) {
        pending.set(handle, { kind: 'interval', site })
        changed()
      }
      return handle
    },
    clearTimeout(handle: unknown) {
      if (pending.delete(handle)) changed()
      original.clearTimeout(handle as never)
    },
    clearInterval(handle: unknown) {
      if (pending.delete(handle)) changed()
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
    async timerPending(timeoutMs = 10_000) {
      if (!(await whenHolds(() => pending.size > 0, timersChanged, timeoutMs, original.setTimeout, original.clearTimeout)))
        throw new Error(`no a2 timer became pending within ${timeoutMs} ms`)
    },
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
        // Timers fire or are cleared shortly after a stop: done as soon as the last one goes, a leak if one is left after settleMs.
        await whenHolds(() => pending.size === 0, timersChanged, options.settleMs ?? 1_000, original.setTimeout, original.clearTimeout)
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
          // A closed socket leaves the active resources a moment later, with no event to wait on: polled.
          const extraSockets = () => countResources().TCPSocketWrap - baseline.TCPSocketWrap
          await waitUntil(() => extraSockets() <= 0, 'sockets to close', 2_000, 20).catch(() => {})
          if (extraSockets() > 0) leaks.push(`${extraSockets()} TCP socket(s) left open by this file`)
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
    // A closed client's backends leave pg_stat_activity asynchronously, announced nowhere: polled, for up to 3 s.
    const count = async () => {
      const [{ n }] = await admin<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where datname = ${database} and pid <> pg_backend_pid()`
      return n
    }
    let n = await count()
    await waitUntil(async () => (n = await count()) === 0, `the backends connected to ${database} to go`, 3_000, 50).catch(() => {})
    return n
  } finally {
    await admin.end({ timeout: 2 })
  }
}
