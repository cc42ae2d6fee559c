/**
 * Diagnostic: inclusive CPU share of code matching each pattern in a .cpuprofile
 * (`npm run bench -- --profile` writes them to bench/results/profiles/).
 *
 *   npx tsx bench/diagnostics/cpuprofile.ts <file.cpuprofile> validateInput node_modules/postgres/ node_modules/ai/
 *
 * A sample counts for a pattern when any frame of its stack matches `functionName@url`.
 * Async continuations lose their callers, so shares are lower bounds.
 */
import { readCpuProfile } from '../lib/profile'

const [file, ...patterns] = process.argv.slice(2)
if (!file) {
  console.error('usage: cpuprofile.ts <file.cpuprofile> <pattern>...')
  process.exit(2)
}
const { profile, byId, parentOf } = readCpuProfile(file)
const self = new Map<number, number>()
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
const total = [...self.values()].reduce((a, b) => a + b, 0)
const regexes = patterns.map((p) => new RegExp(p))
let busy = 0
const inclusive = new Array<number>(patterns.length).fill(0)
for (const [id, us] of self) {
  if (byId.get(id)!.callFrame.functionName === '(idle)') continue
  busy += us
  const frames: string[] = []
  for (let cur: number | undefined = id; cur !== undefined; cur = parentOf.get(cur)) {
    const f = byId.get(cur)!.callFrame
    frames.push(`${f.functionName}@${f.url}:${f.lineNumber + 1}`)
  }
  regexes.forEach((re, i) => {
    if (frames.some((f) => re.test(f))) inclusive[i] += us
  })
}
console.log(`busy ${((100 * busy) / total).toFixed(1)}% of ${(total / 1e6).toFixed(1)} s sampled`)
patterns.forEach((p, i) => console.log(`${((100 * inclusive[i]) / Math.max(1, busy)).toFixed(1).padStart(5)}% of busy  ${p}`))
