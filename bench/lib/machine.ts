/**
 * What the numbers were measured on: cores, CPU model, memory, Node, the database, and how
 * busy the machine already was (other processes share these 2 cores; a figure taken on a
 * loaded machine says so next to it).
 */
import os from 'node:os'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { readFileSync, readdirSync } from 'node:fs'

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

/** CPU ticks (1/100 s) used so far by every process whose command is `name` (Linux; 0 elsewhere). */
function ticksOf(name: string): number {
  let ticks = 0
  let entries: string[] = []
  try {
    entries = readdirSync('/proc')
  } catch {
    return 0
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const close = stat.lastIndexOf(')')
      if (stat.slice(stat.indexOf('(') + 1, close) !== name) continue
      const fields = stat.slice(close + 2).split(' ')
      ticks += Number(fields[11]) + Number(fields[12]) // utime, stime
    } catch {
      // gone meanwhile
    }
  }
  return ticks
}

/**
 * CPU used by the Postgres server's processes between the call and `stop()`, in % of one
 * core. Every backend counts, so other databases' work on a shared server shows up too.
 */
export function postgresCpu(): { stop(): number } {
  const start = ticksOf('postgres')
  const t0 = Date.now()
  return {
    stop() {
      const ticks = ticksOf('postgres') - start
      // Backends that exit take their ticks with them: never below zero.
      return Math.max(0, Math.round((ticks * 10 * 100) / Math.max(1, Date.now() - t0)))
    },
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
