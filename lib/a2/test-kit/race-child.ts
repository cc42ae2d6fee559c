/**
 * A worker process for the multi-process race tests, killed with SIGKILL by its parent.
 * env: DB_URL, CONSUMER (name), SCENARIO ('provider' | 'hang'), PROVIDER_URL, LEASE_MS.
 * Prints JSON lines: {"ready":true} once its worker runs, {"started":attempt} per run.
 */
import { consumer, createServer, openPostgresStore } from '@/lib/a2/server'
import { testContract } from './contract'

const { DB_URL, CONSUMER, SCENARIO, PROVIDER_URL, LEASE_MS } = process.env
const say = (value: unknown) => process.stdout.write(JSON.stringify(value) + '\n')
const never = new Promise<never>(() => {})

const store = await openPostgresStore(DB_URL!)
const c = consumer({
  contract: testContract,
  name: CONSUMER!,
  types: ['generate'],
  abortOn: ['cancelled'],
  leaseMs: Number(LEASE_MS ?? 1000),
}).run(async (ctx) => {
  say({ started: ctx.attempt })
  if (SCENARIO === 'provider') {
    await ctx.effect('charge', async (key) => {
      await fetch(`${PROVIDER_URL}/charge?key=${encodeURIComponent(key)}`, { method: 'POST' })
      return never // killed before the response is recorded
    })
  }
  await never // 'hang': ignores its signal
})
const server = createServer({ contract: testContract, consumers: [c], store })
await server.startWorker({ pollMs: 50, graceMs: 60_000 })
say({ ready: true })
