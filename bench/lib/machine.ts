/**
 * What the numbers were measured on: cores, CPU model, memory, Node, the database, and how
 * busy the machine already was (other processes share these 2 cores; a figure taken on a
 * loaded machine says so next to it).
 */
import os from 'node:os'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { readFileSync } from 'node:fs'

export interface Machine {
  cores: number
  cpuModel: string
  memoryGiB: number
  node: string
  platform: string
  loadAverage: number[]
  database: string
}

export function machine(database: string): Machine {
  const cpus = os.cpus()
  return {
    cores: os.availableParallelism?.() ?? cpus.length,
    cpuModel: cpus[0]?.model?.trim() ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    loadAverage: os.loadavg().map((x) => Math.round(x * 100) / 100),
    database,
  }
}

/** Whole-machine CPU use between `start()` and `stop()`, from /proc/stat (Linux); undefined elsewhere. */
export function cpuMeter(): { stop(): { busyPct: number; coresBusy: number } | undefined } {
  const read = (): { busy: number; total: number } | undefined => {
    try {
      const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]
      const fields = line.trim().split(/\s+/).slice(1).map(Number)
      const idle = fields[3] + (fields[4] ?? 0)
      const total = fields.reduce((a, b) => a + b, 0)
      return { busy: total - idle, total }
    } catch {
      return undefined
    }
  }
  const before = read()
  return {
    stop() {
      const after = read()
      if (!before || !after || after.total === before.total) return undefined
      const busyPct = (100 * (after.busy - before.busy)) / (after.total - before.total)
      return { busyPct: Math.round(busyPct), coresBusy: Math.round((busyPct / 100) * os.availableParallelism()) * 1 }
    },
  }
}

/** CPU seconds used by this process between the call and `stop()`, as a share of one core. */
export function processCpu(): { stop(): number } {
  const start = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  return {
    stop() {
      const used = process.cpuUsage(start)
      const elapsedUs = Number(process.hrtime.bigint() - t0) / 1000
      return Math.round((100 * (used.user + used.system)) / elapsedUs)
    },
  }
}

/**
 * CPU used between the call and `stop()` by the processes `pids` names, in % of one core. The
 * rig passes the bench database's Postgres backends and the server's background processes
 * (WAL writer, checkpointer…), so other databases' backends on a shared server (other
 * benches and tests: they took this figure from 0 to 59% between alternated runs) stay out;
 * figure 16 its anchor server and redis-server. A process that exits during the phase takes
 * its ticks with it.
 */
export async function pidsCpu(pids: () => Promise<number[]>): Promise<{ stop(): Promise<number> }> {
  const t0 = Date.now()
  const start = new Map<number, number>()
  for (const pid of await pids()) start.set(pid, ticksOfPid(pid) ?? 0)
  return {
    async stop() {
      let ticks = 0
      for (const pid of new Set([...start.keys(), ...(await pids())])) {
        const now = ticksOfPid(pid)
        if (now !== undefined) ticks += Math.max(0, now - (start.get(pid) ?? 0))
      }
      return Math.round((ticks * 10 * 100) / Math.max(1, Date.now() - t0))
    },
  }
}

/** CPU ticks (1/100 s) a process used so far (utime + stime); undefined when it is gone or not on Linux. */
export function ticksOfPid(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return undefined
  }
}

/** Event-loop delay of this process between the call and `stop()`: how late a ready callback ran (ms). */
export function loopDelay(): { stop(): { p50: number; p99: number; max: number } } {
  const histogram = monitorEventLoopDelay({ resolution: 5 })
  histogram.enable()
  return {
    stop() {
      histogram.disable()
      const ms = (ns: number) => Math.round(ns / 1e4) / 100
      return { p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max) }
    },
  }
}

/**
 * A child process's answer to the parent's `cpu` call: its CPU (% of one core) and event-loop
 * delay since the previous call.
 */
export function cpuSampler(): () => { pct: number; lag: { p50: number; p99: number; max: number } } {
  let cpu = processCpu()
  let delay = loopDelay()
  return () => {
    const sample = { pct: cpu.stop(), lag: delay.stop() }
    cpu = processCpu()
    delay = loopDelay()
    return sample
  }
}
