/**
 * `npm run test:explore -- --runs N [--seed S] [--path P]`: the interleaving suite
 * (lib/a2/interleavings.test.ts) with N fresh random sequences per layer instead of `npm test`'s
 * fixed 200. A failure prints the seed and the shrunk command list; `--seed S --path P`
 * replays exactly that case. Postgres joins when TEST_DATABASE_URL is set.
 */
import { spawnSync } from 'node:child_process'
import { parseArgs } from 'node:util'

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '2000' }, seed: { type: 'string' }, path: { type: 'string' } },
})
const runs = Number(values.runs)
if (!Number.isInteger(runs) || runs < 1) {
  console.error('--runs must be a positive integer')
  process.exit(2)
}
const env: NodeJS.ProcessEnv = { ...process.env, FC_RUNS: String(runs), FC_EXPLORE: '1', FC_STATS: '1' }
if (values.seed) env.FC_SEED = values.seed
if (values.path) env.FC_PATH = values.path
const result = spawnSync('npx', ['vitest', 'run', 'lib/a2/interleavings.test.ts', '--testTimeout', String(Math.max(600_000, runs * 2_000))], {
  stdio: 'inherit',
  env,
})
process.exit(result.status ?? 1)
