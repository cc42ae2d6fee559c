/**
 * CPU profiles for `--profile`: this process through the inspector, the worker child
 * through `--cpu-prof`. `topFunctions` folds a .cpuprofile into self time per function
 * and per package, which is what the report quotes as evidence.
 */
import { Session } from 'node:inspector/promises'
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import path from 'node:path'

export async function profileThisProcess(): Promise<{ stop(file: string): Promise<string> }> {
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: 500 })
  await session.post('Profiler.start')
  return {
    async stop(file) {
      const { profile } = await session.post('Profiler.stop')
      mkdirSync(path.dirname(file), { recursive: true })
      writeFileSync(file, JSON.stringify(profile))
      session.disconnect()
      return file
    },
  }
}

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  hitCount?: number
}

export interface ProfileSummary {
  totalMs: number
  functions: Array<{ name: string; where: string; selfPct: number }>
  packages: Array<{ name: string; selfPct: number }>
}

function packageOf(url: string): string {
  if (!url) return '(native/idle)'
  const m = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)
  if (m) return m[1]
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0]
  const rel = url.replace(/^file:\/\//, '').replace(process.cwd() + '/', '')
  return rel.split('/').slice(0, 2).join('/')
}

export function topFunctions(file: string, limit = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as {
    nodes: Node[]
    samples: number[]
    timeDeltas: number[]
    startTime: number
    endTime: number
  }
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const self = new Map<number, number>()
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
  const total = [...self.values()].reduce((a, b) => a + b, 0) || 1
  const fn = new Map<string, { name: string; where: string; us: number }>()
  const pkg = new Map<string, number>()
  for (const [id, us] of self) {
    const node = byId.get(id)!
    const { functionName, url, lineNumber } = node.callFrame
    const name = functionName || '(anonymous)'
    const where = url ? `${url.replace(/^file:\/\//, '').replace(process.cwd() + '/', '')}:${lineNumber + 1}` : ''
    const key = `${name}@${where}`
    const entry = fn.get(key) ?? { name, where, us: 0 }
    entry.us += us
    fn.set(key, entry)
    const p = ['(idle)', '(program)', '(garbage collector)'].includes(name) ? name : packageOf(url)
    pkg.set(p, (pkg.get(p) ?? 0) + us)
  }
  const pct = (us: number) => Math.round((1000 * us) / total) / 10
  return {
    totalMs: Math.round(total / 1000),
    functions: [...fn.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, limit)
      .map((f) => ({ name: f.name, where: f.where, selfPct: pct(f.us) })),
    packages: [...pkg.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, us]) => ({ name, selfPct: pct(us) })),
  }
}

/** A .cpuprofile read for the diagnostics: its nodes by id and each node's parent. */
export interface ReadProfile {
  profile: { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }
  byId: Map<number, ProfileNode>
  parentOf: Map<number, number>
}

export interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}

export function readCpuProfile(file: string): ReadProfile {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as ReadProfile['profile']
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parentOf = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id)
  return { profile, byId, parentOf }
}

/** Prints a `.cpuprofile`'s busy time, its top packages and its top functions by self time. */
export function printTopFunctions(file: string, counts: { packages: number; functions: number }): void {
  const top = topFunctions(file, counts.functions)
  console.log(`profile ${file}: busy ${(top.totalMs / 1000).toFixed(1)} s`)
  for (const p of top.packages.slice(0, counts.packages)) console.log(`  ${p.selfPct.toFixed(1).padStart(5)}%  ${p.name}`)
  for (const f of top.functions) console.log(`  ${f.selfPct.toFixed(1).padStart(5)}%  ${f.name}  ${f.where}`)
}
