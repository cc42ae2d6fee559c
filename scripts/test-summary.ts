/**
 * The closing line of `npm test`: every layer's counts added up from the runners' JSON
 * reports, as "N passed, N failed, N skipped" — so a run that executed no test is visible.
 */
import { existsSync, readFileSync } from 'node:fs'

interface Counts {
  passed: number
  failed: number
  skipped: number
}
const total: Counts = { passed: 0, failed: 0, skipped: 0 }
const read = (file: string) => (existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined)

const vitest = read('reports/vitest.json') as
  { numPassedTests: number; numFailedTests: number; numPendingTests: number; numTodoTests: number } | undefined
if (vitest) {
  total.passed += vitest.numPassedTests
  total.failed += vitest.numFailedTests
  total.skipped += vitest.numPendingTests + vitest.numTodoTests
}
for (const file of ['reports/e2e.json', 'reports/chaos.json']) {
  const report = read(file) as { stats: { expected: number; unexpected: number; flaky: number; skipped: number } } | undefined
  if (!report) continue
  total.passed += report.stats.expected
  total.failed += report.stats.unexpected + report.stats.flaky
  total.skipped += report.stats.skipped
}
console.log(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`)
process.exit(total.failed > 0 || total.passed === 0 ? 1 : 0)
