/**
 * The rows of the race table where a process must die, on Postgres with real processes
 * killed by SIGKILL: the provider request made and the process gone before it recorded
 * the outcome; the controller gone in the middle of a drain. The same rows run in one
 * process, on PGlite too, in races.test.ts (a simulated death).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer as createHttpServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { sql } from 'drizzle-orm'
import { consumer, createServer, type A2Server, type Store } from '@/lib/a2/server'
import { query } from './internal/store/store'
import { createTestDb, POSTGRES_URL, type TestDb } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'
import { gate, historyOf, quarantineOpenJobs, waitForJob } from './test-kit/runtime'

describe.skipIf(!POSTGRES_URL)('the race table with real processes (Postgres)', () => {
  let testDb: TestDb
  let store: Store
  let children: ChildProcess[] = []
  let servers: Array<A2Server<typeof chat>> = []
  let provider: Server
  let providerUrl: string
  /** What the outside provider did, by idempotency key. */
  const charges: string[] = []
  let onCharge: (key: string) => void = () => {}

  beforeAll(async () => {
    testDb = await createTestDb('postgres')
    store = await testDb.open()
    provider = createHttpServer((req, res) => {
      const url = new URL(req.url!, 'http://x')
      const key = url.searchParams.get('key')!
      if (url.pathname === '/charge') {
        if (!charges.includes(key)) charges.push(key) // the provider is idempotent by key
        onCharge(key)
        res.end('{"receipt":"r-' + key + '"}')
      } else if (url.pathname === '/lookup') {
        res.end(JSON.stringify({ found: charges.includes(key) }))
      } else res.writeHead(404).end()
    })
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r))
    providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`
  })
  afterEach(async () => {
    for (const child of children) child.kill('SIGKILL')
    children = []
    await Promise.all(servers.map((s) => s.stopWorkers({ graceMs: 0 })))
    servers = []
    await quarantineOpenJobs(store)
  })
  afterAll(async () => {
    await new Promise((r) => provider.close(r))
    await testDb.drop()
  })

  /** Starts a worker child and resolves once it is ready; `started` resolves when its handler begins. */
  async function spawnChild(env: Record<string, string>) {
    const child = spawn(process.execPath, ['--import', 'tsx', 'lib/a2/test-kit/race-child.ts'], {
      env: { ...process.env, DB_URL: testDb.url!, PROVIDER_URL: providerUrl, LEASE_MS: '1000', ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    children.push(child)
    const ready = gate()
    const started = gate<number>()
    let buffer = ''
    child.stdout!.on('data', (data: Buffer) => {
      buffer += data.toString()
      for (let nl = buffer.indexOf('\n'); nl !== -1; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl)
        buffer = buffer.slice(nl + 1)
        try {
          const message = JSON.parse(line) as { ready?: boolean; started?: number }
          if (message.ready) ready.open()
          if (message.started) started.open(message.started)
        } catch {
          // not ours
        }
      }
    })
    await ready.promise
    return { child, started: started.promise }
  }

  const effectsOf = (jobId: number) =>
    query<{ key: string; status: string; attempt: number }>(store.db, sql`select key, status, attempt from a2_effects where job_id = ${jobId}`)

  /** The parent's consumer of the same name: its charge goes to the provider only if reconciliation says so. */
  function parentServer(name: string, reconcile: boolean) {
    const calls: number[] = []
    const c = consumer({ contract: chat, name, types: ['generate'], abortOn: ['cancelled'], leaseMs: 1000 }).run(async (ctx) => {
      await ctx.effect(
        'charge',
        async (key) => {
          calls.push(ctx.attempt)
          const response = await fetch(`${providerUrl}/charge?key=${encodeURIComponent(key)}`, { method: 'POST' })
          return (await response.json()) as { receipt: string }
        },
        reconcile
          ? {
              reconcile: async (key) => {
                const { found } = (await (await fetch(`${providerUrl}/lookup?key=${encodeURIComponent(key)}`)).json()) as { found: boolean }
                return found ? { done: true, result: { receipt: `r-${key}` } } : { done: false }
              },
            }
          : {},
      )
    })
    const server = createServer({ contract: chat, consumers: [c], store })
    servers.push(server)
    return { server, calls }
  }

  for (const reconcile of [true, false]) {
    it(`process dies after the provider request: effect ${reconcile ? 'reconciled through the provider' : 'UNKNOWN, then reconciled by an operator'}`, async () => {
      const name = `charge_${reconcile ? 'rec' : 'op'}`
      const { server, calls } = parentServer(name, reconcile)
      const { id: sessionId } = await server.sessions.create('u')
      const { child, started } = await spawnChild({ CONSUMER: name, SCENARIO: 'provider' })
      const charged = gate()
      onCharge = () => {
        child.kill('SIGKILL') // dies right after the provider did the work, before recording it
        charged.open()
      }
      const [generate] = await server.append(sessionId, { type: 'generate', payload: {} })
      expect(await started).toBe(1)
      await charged.promise
      onCharge = () => {}
      await new Promise((r) => child.once('exit', r))

      await server.startWorker({ pollMs: 50 })
      if (reconcile) {
        const job = await waitForJob(store, generate.id, name, (j) => j.status === 'COMPLETED', 15_000)
        expect(job.attempt).toBe(2)
        expect(await effectsOf(job.id)).toMatchObject([{ key: 'charge', status: 'DONE' }])
        expect(await historyOf(store, job.id)).toContain('2:ACTIVE>ACTIVE:EFFECT_RECONCILED_DONE')
      } else {
        const job = await waitForJob(store, generate.id, name, (j) => j.status === 'UNKNOWN', 15_000)
        expect(await effectsOf(job.id)).toMatchObject([{ key: 'charge', status: 'UNKNOWN', attempt: 1 }])
        expect((await historyOf(store, job.id)).slice(-2)).toEqual(['2:ACTIVE>ACTIVE:EFFECT_UNRECONCILED', '2:ACTIVE>UNKNOWN:EFFECT_UNKNOWN'])
        // The operator checks the provider and records that it happened; the run resumes and replays it.
        await server.operator.resolveEffect(job.id, 'charge', { done: true, result: { receipt: 'from the provider dashboard' } }, 'ops')
        const done = await waitForJob(store, generate.id, name, (j) => j.status === 'COMPLETED', 15_000)
        expect(done.attempt).toBe(3)
      }
      expect(charges).toHaveLength(1) // the provider did the work exactly once
      expect(calls).toEqual([]) // the successor never called it again
      charges.length = 0
    }, 40_000)
  }

  it('controller restarts during drain: the durable CANCELLING state resumes and completes the drain', async () => {
    const name = 'drain'
    const server = createServer({ contract: chat, consumers: [], store })
    servers.push(server)
    const { id: sessionId } = await server.sessions.create('u')
    const { child, started } = await spawnChild({ CONSUMER: name, SCENARIO: 'hang' })
    // The job must exist for `name`: append through a server that knows the consumer.
    const c = consumer({ contract: chat, name, types: ['generate'], abortOn: ['cancelled'], leaseMs: 1000 }).run(async () => {})
    const routed = createServer({ contract: chat, consumers: [c], store })
    servers.push(routed)
    const [generate] = await routed.append(sessionId, { type: 'generate', payload: {} })
    await started
    await routed.append(sessionId, { type: 'cancelled', payload: { of: generate.id, lastSeenIndex: 0 } })
    const cancelling = await waitForJob(store, generate.id, name, (j) => j.status === 'CANCELLING')
    child.kill('SIGKILL') // the worker (and the controller duty it carried) dies mid-drain
    await new Promise((r) => child.once('exit', r))

    await routed.startWorker({ pollMs: 50, graceMs: 60_000 }) // a new controller: only durable state to go on
    const job = await waitForJob(store, generate.id, name, (j) => j.status === 'CANCELLED', 15_000)
    // The drain takes the run as a new attempt, fencing the dead owner's attempt out. Whether
    // the death was seen from the owner's liveness lock (OWNER_DIED) or its 1 s lease ran out
    // first depends on how soon the new controller trusts its own lock (3 s).
    expect(job.attempt).toBe(cancelling.attempt + 1)
    const history = await historyOf(store, job.id)
    expect(history.filter((line) => line !== '1:CANCELLING>CANCELLING:OWNER_DIED')).toEqual([
      '1:ACTIVE>CANCELLING:CANCEL_APPENDED',
      '2:CANCELLING>CANCELLED:DRAINED_AFTER_OWNER_LOST',
    ])
  }, 30_000)
})
