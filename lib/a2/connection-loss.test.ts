/**
 * A worker's own connections break while the store stays up (a killed backend, a proxy's
 * reset): its liveness lock's and its LISTEN's, mid-answer (Postgres only: PGlite has no
 * connection to break). The worker takes both back, its answer goes on under the same
 * attempt, and a second process that can judge liveness (its own lock held past the settle
 * time) never declares it dead meanwhile. Its own database; the victim's connections are the
 * ones named `a2-victim`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { createServer, openPostgresStore, type Store } from '@/lib/a2/server'
import { createTestDb, layers, type TestDb } from './test-kit/db'
import { testContract } from './test-kit/contract'
import { eventsOf, historyOf, interceptStore, jobOf, waitForJob, waitUntil } from './test-kit/runtime'
import { consumer } from './internal/runtime/consumer'
import { livenessFor } from './internal/runtime/liveness'
import { LIFE_LOCK_CLASS, query } from './internal/store/store'

const VICTIM = 'a2-victim'

/** The victim's backends holding a liveness lock, and LISTENing. */
const victimBackends = (store: Store) =>
  query<{ pid: number; role: 'lock' | 'listen' }>(
    store.db,
    sql`select pid, case when query ilike 'listen%' then 'listen' else 'lock' end as role from pg_stat_activity
        where datname = current_database() and application_name = ${VICTIM}
          and (query ilike 'listen%' or pid in (select pid from pg_locks where locktype = 'advisory'
                                                 and classid = ${LIFE_LOCK_CLASS} and objsubid = 2 and granted))`,
  )

describe.runIf(layers.includes('postgres'))('a worker whose lock and LISTEN connections break, on postgres', () => {
  let testDb: TestDb
  let observerStore: Store
  let victimStore: Store
  beforeAll(async () => {
    testDb = await createTestDb('postgres')
    observerStore = await testDb.open()
    victimStore = await openPostgresStore(`${testDb.url}?application_name=${VICTIM}`)
  })
  afterAll(async () => {
    await victimStore?.close()
    await testDb?.drop()
  })

  it('takes both back within a second; the answer goes on under its attempt; nobody declares it dead; a Stop then lands at once', async () => {
    // The observer's every statement (its drain ticks, its liveness checks) is told here.
    const observerStatements = new Set<() => void>()
    const observed = interceptStore(observerStore, { after: () => observerStatements.forEach((told) => told()) })
    const nextObserverStatement = () =>
      new Promise<void>((resolve) =>
        observerStatements.add(function told() {
          observerStatements.delete(told)
          resolve()
        }),
      )
    // Streams a chunk after each statement of the observer, until stopped: while the answer goes
    // on, the observer keeps looking (each chunk counted below is one more look it took).
    const generate = consumer({ contract: testContract, name: 'generate', types: ['generate'], abortOn: ['cancelled'] }).run(async (ctx) => {
      while (!ctx.signal.aborted) {
        await ctx.append({ type: 'chunk', payload: { of: ctx.event.id, delta: 'x' } }).catch((error) => {
          if (!ctx.signal.aborted) throw error
        })
        await nextObserverStatement()
      }
    })
    const victim = createServer({ contract: testContract, consumers: [generate], store: victimStore })
    const observer = createServer({ contract: testContract, consumers: [generate], store: observed })
    // The observer claims nothing (concurrency 0) and drains every 100 ms: it would release
    // the victim's run within a tick of judging it dead.
    const watching = await observer.startWorker({ pollMs: 100, concurrency: 0 })
    const observerLiveness = (await livenessFor(observerStore))!
    const worker = await victim.startWorker({ pollMs: 100 })
    try {
      // Only a process whose own lock has held for the settle time judges others.
      await waitUntil(() => observerLiveness.trusted(), 'the observer may judge liveness', 10_000, 50)
      const { id } = await victim.sessions.create('u1')
      const [trigger] = await victim.append(id, { type: 'generate', payload: {} })
      const chunks = async () => (await eventsOf(observerStore, id)).filter((e) => e.type === 'chunk').length
      await waitUntil(async () => (await chunks()) >= 3, 'the answer streams')

      const killed = await victimBackends(observerStore)
      expect(killed.map((b) => b.role).sort()).toEqual(['listen', 'lock'])
      await query(
        observerStore.db,
        sql`select pg_terminate_backend(pid) from (values ${sql.join(
          killed.map((b) => sql`(${b.pid}::int)`),
          sql`, `,
        )}) as k(pid)`,
      )
      const brokenAt = performance.now()
      const before = await chunks()

      // Both connections are back, on new backends, within a second.
      const back: Partial<Record<'lock' | 'listen', number>> = {}
      await waitUntil(
        async () => {
          for (const b of await victimBackends(observerStore)) {
            if (!killed.some((k) => k.pid === b.pid)) back[b.role] ??= performance.now() - brokenAt
          }
          return back.lock !== undefined && back.listen !== undefined
        },
        'the lock and the LISTEN taken back',
        1_000,
        5,
      )
      const backAfterMs = Math.max(back.lock!, back.listen!)
      console.log(
        `[connection-loss] back on new backends after: lock ${back.lock!.toFixed(0)} ms, LISTEN ${back.listen!.toFixed(0)} ms (polled every 5 ms)`,
      )
      expect(backAfterMs).toBeLessThan(1_000)

      // Many of the observer's drain ticks (100 ms each) pass while the answer goes on.
      await waitUntil(async () => (await chunks()) >= before + 40, 'the answer goes on after the break')
      const job = (await jobOf(observerStore, trigger.id, 'generate'))!
      expect(job.attempt).toBe(1)
      expect(job.status).toBe('ACTIVE')
      expect(await historyOf(observerStore, job.id)).not.toContainEqual(expect.stringContaining('OWNER_DIED'))

      // The LISTEN is back: a Stop reaches the run by its NOTIFY, not at the renewal 5 s away.
      const stoppedAt = performance.now()
      await observer.append(id, { type: 'cancelled', payload: { of: trigger.id, lastSeenIndex: 0 } })
      await waitForJob(observerStore, trigger.id, 'generate', (j) => j.status === 'CANCELLED', 3_000)
      expect(performance.now() - stoppedAt).toBeLessThan(3_000)
      expect(await historyOf(observerStore, job.id)).not.toContainEqual(expect.stringContaining('OWNER_DIED'))
    } finally {
      await worker.stop()
      await watching.stop()
      await observerLiveness.release()
    }
  })
})
