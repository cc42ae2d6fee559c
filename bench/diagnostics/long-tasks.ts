/**
 * Diagnostic: the longest stretches a .cpuprofile's thread was busy without a break (runs of
 * consecutive samples that are not "(idle)"), each with the functions that took most of it
 * (self time, with the caller that named it). What holds an event loop, and for how long.
 *
 *   npx tsx bench/diagnostics/long-tasks.ts <file.cpuprofile> [count]
 *
 * On a loaded machine a run also counts time the process was not scheduled: compare runs.
 */
import { readCpuProfile } from '../lib/profile'

const [file, countArg] = process.argv.slice(2)
if (!file) {
  console.error('usage: long-tasks.ts <file.cpuprofile> [count]')
  process.exit(2)
}
const { profile, byId, parentOf } = readCpuProfile(file)

const name = (id: number) => {
  const f = byId.get(id)!.callFrame
  return `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`
}
/** The frame and the nearest frame of this repository's code above it (what asked for the work). */
const label = (id: number) => {
  let owner: number | undefined = parentOf.get(id)
  while (owner !== undefined && !/\/(lib|bench|app|test)\//.test(byId.get(owner)!.callFrame.url)) owner = parentOf.get(owner)
  return owner === undefined || owner === id ? name(id) : `${name(id)} ← ${name(owner)}`
}

const runs: Array<{ us: number; start: number; self: Map<string, number> }> = []
let current: (typeof runs)[number] | undefined
let at = 0
profile.samples.forEach((id, i) => {
  // A sample's delta is the time since the previous sample: it belongs to the stretch that sample ends.
  const dt = profile.timeDeltas[i] ?? 0
  at += dt
  if (byId.get(id)!.callFrame.functionName === '(idle)') {
    current = undefined
    return
  }
  if (!current) runs.push((current = { us: 0, start: at, self: new Map() }))
  current.us += dt
  const key = label(id)
  current.self.set(key, (current.self.get(key) ?? 0) + dt)
})
runs.sort((a, b) => b.us - a.us)
for (const run of runs.slice(0, Number(countArg ?? 10))) {
  console.log(`${(run.us / 1000).toFixed(1)} ms busy at ${(run.start / 1e6).toFixed(2)} s`)
  for (const [fn, us] of [...run.self].sort((a, b) => b[1] - a[1]).slice(0, 6)) console.log(`    ${(us / 1000).toFixed(1).padStart(6)} ms  ${fn}`)
}
