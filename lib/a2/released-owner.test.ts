/**
 * A released owner: liveness judged a worker dead (OWNER_DIED) while its process still runs
 * its attempt, inside an effect (a model call) whose outcome it will record late. Whoever
 * takes the run over — a new claim, the drain settling a Stop, the drain failing a run out of
 * attempts — must not take a reconcile hook's "not done" as proof for that effect: the old
 * call may still be running, so it is UNKNOWN until the stored state proves it (the late
 * outcome, or an operator). And the old attempt's other late writes are refused by the
 * attempt fence.
 *
 * fast-check draws the takeover path, the hook's verdict and when the old call returns
 * (before the takeover, after it, never); each step is driven by hand (the liveness judge, the
 * drain tick, the new attempt), so a seed replays it. PGlite and Postgres.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { consumer, createServer, type Store } from '@/lib/a2/server'
import { validateInput } from './internal/core/contract'
import { drainOnce } from './internal/runtime/drain'
import { EffectUnknown, applyVerdict, runEffect } from './internal/runtime/effects'
import type { RuntimeHost } from './internal/runtime/runtime-host'
import { claimJobs } from './internal/runtime/jobs'
import type { Liveness } from './internal/runtime/liveness'
import { append } from './internal/log/append'
import { settleAttempt } from './internal/runtime/settle'
import { query } from './internal/store/store'
import type { ReconcileResult } from './internal/core/types'
import { layers, useTestStore } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'
import { gate } from './test-kit/runtime'

const RUNS = Number(process.env.FC_RUNS ?? 30)
const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : 20261202
const LEASE_MS = 600_000
/** The owner key of the process liveness gets wrong: its lock connection dropped, it runs on. */
const CUT_OFF = 999

type Path = 'claimed again' | 'stopped' | 'out of attempts'
type Verdict = 'not done' | 'done' | 'unknown' | 'throws'
type Late = 'before the takeover' | 'after the takeover' | 'never'

/** A judge that holds the cut-off process for dead, as a dropped lock connection makes a real one do. */
const misjudging: Liveness = {
  key: 1,
  ownerGone: (ownerKey) => sql`${ownerKey} = ${CUT_OFF}`,
  trusted: () => true,
  release: async () => {},
}

describe.each(layers)('an owner released as dead that is still running, on %s', (kind) => {
  const store = useTestStore(kind)
  let base: Store
  let n = 0
  beforeAll(() => {
    base = store()
  })

  const effectsOf = (jobId: number) =>
    query<{ key: string; status: string; result: { value: unknown } | null }>(
      base.db,
      sql`select key, status, result from a2_effects where job_id = ${jobId} order by key`,
    )
  const jobOf = async (jobId: number) =>
    (await query<{ status: string; attempt: number }>(base.db, sql`select status, attempt from a2_jobs where id = ${jobId}`))[0]

  async function scenario(path: Path, verdict: Verdict, late: Late) {
    const name = `ro${++n}`
    const reconcile = async (): Promise<ReconcileResult> => {
      if (verdict === 'throws') throw new Error('provider lookup failed')
      return verdict === 'unknown' ? 'unknown' : verdict === 'done' ? { done: true, result: 'found' } : { done: false }
    }
    const c = consumer({
      contract: chat,
      name,
      types: ['generate'],
      abortOn: ['cancelled'],
      maxAttempts: path === 'out of attempts' ? 1 : 3,
      leaseMs: LEASE_MS,
      reconcile,
    }).run(async () => {})
    const server = createServer({ contract: chat, consumers: [c], store: base })
    const { id: sessionId } = await server.sessions.create('u')
    const [generate] = await server.append(sessionId, { type: 'generate', payload: {} })
    const host: RuntimeHost = {
      store: base,
      contract: chat,
      consumers: new Map([[name, c as never]]),
      append: (sid, inputs, options) =>
        append(
          base,
          server.routing,
          sid,
          inputs.map((input) => validateInput(chat, input, 'server')),
          options,
        ),
    }

    // The old attempt: claimed by the process liveness will misjudge, inside its model call.
    const [old] = await claimJobs(base.db, { consumers: [name], owner: 'cut-off', ownerKey: CUT_OFF, leaseMs: { [name]: LEASE_MS }, limit: 1 })
    const oldFence = { jobId: old.id, attempt: old.attempt }
    const entered = gate()
    const answer = gate()
    let inFlight = 0
    /** Dispatches that started while another call of the same effect was still running. */
    let overlapping = 0
    const call = async (value: string) => {
      if (inFlight > 0) overlapping++
      inFlight++
      try {
        if (value === 'receipt') {
          entered.open()
          await answer.promise // the provider answers when the test says so; the signal cannot stop it
        }
        return value
      } finally {
        inFlight--
      }
    }
    const oldOutcome = runEffect(base.db, { fence: oldFence, cancelVersion: old.cancelVersion, signal: new AbortController().signal }, 'tool', () =>
      call('receipt'),
    ).then(
      (v) => ({ ok: true as const, v }),
      (e: unknown) => ({ ok: false as const, e }),
    )
    await entered.promise
    const returnOld = async () => {
      answer.open()
      return oldOutcome
    }
    if (late === 'before the takeover') expect((await returnOld()).ok).toBe(true)

    if (path === 'stopped') await server.append(sessionId, { type: 'cancelled', payload: { of: generate.id, lastSeenIndex: 0 } })
    const drain = () => drainOnce(host, { owner: 'drain', liveness: misjudging, graceMs: LEASE_MS, forceOut: () => {} })
    /** The next claim, if the run is claimable: its attempt reaches the effect and ends (settle.ts). */
    const claimAgain = async () => {
      const [next] = await claimJobs(base.db, { consumers: [name], owner: 'w2', leaseMs: { [name]: LEASE_MS }, limit: 1 })
      if (!next) return
      const signal = new AbortController().signal
      const outcome = await runEffect(
        base.db,
        { fence: { jobId: next.id, attempt: next.attempt }, cancelVersion: next.cancelVersion, signal, reconcile },
        'tool',
        () => call('again'),
      ).then(
        () => ({ returned: true, error: undefined as unknown }),
        (error: unknown) => ({ returned: false, error }),
      )
      await settleAttempt(host, next, signal, outcome.returned, outcome.error)
    }
    // One tick: the judge releases the run (OWNER_DIED) if it may; a Stop or an exhausted budget lets the same tick take it.
    await drain()
    if (path === 'claimed again') await claimAgain()
    // While the old call may still be running, nobody calls its effect "not done".
    const whileRunning = { job: await jobOf(old.id), effects: await effectsOf(old.id), overlapping }
    if (late === 'after the takeover') expect((await returnOld()).ok).toBe(true)

    // The old lease runs out (the clock driven by hand): by then the old process's own clock has
    // aborted its attempt, the proof a lapsed lease gives; whoever comes next may take the run.
    await query(base.db, sql`update a2_jobs set lease_until = now() - interval '1 millisecond' where id = ${old.id} and owner = 'cut-off'`)
    await drain()
    if (path === 'claimed again') await claimAgain()
    const taken = await jobOf(old.id)
    expect(taken.attempt).toBeGreaterThan(old.attempt)

    // The old attempt's late writes, now that the run has a new attempt number: refused.
    const lateAppend = await append(
      base,
      server.routing,
      sessionId,
      [validateInput(chat, { type: 'message', payload: { text: 'late' } }, 'server')],
      {
        fence: oldFence,
      },
    ).then(
      () => 'admitted',
      (e: { code?: string }) => e.code,
    )
    expect(lateAppend).toBe('fenced')
    let lateCalls = 0
    const lateEffect = await runEffect(
      base.db,
      { fence: oldFence, cancelVersion: old.cancelVersion, signal: new AbortController().signal },
      'other',
      async () => {
        lateCalls++
      },
    ).then(
      () => 'admitted',
      (e: { code?: string }) => e.code,
    )
    expect(lateEffect).not.toBe('admitted')
    expect(lateCalls).toBe(0)
    return { jobId: old.id, whileRunning, final: { job: await jobOf(old.id), effects: await effectsOf(old.id) } }
  }

  it(`never calls a released owner's running effect "not done", over ${RUNS} drawn runs`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Path>('claimed again', 'stopped', 'out of attempts'),
        fc.constantFrom<Verdict>('not done', 'done', 'unknown', 'throws'),
        fc.constantFrom<Late>('before the takeover', 'after the takeover', 'never'),
        async (path, verdict, late) => {
          const r = await scenario(path, verdict, late)
          const tool = (s: { effects: Array<{ key: string; status: string }> }) => s.effects.find((e) => e.key === 'tool')?.status
          const terminal = (status: string) => ['COMPLETED', 'FAILED', 'CANCELLED'].includes(status)
          const label = `${path}, hook says ${verdict}, old call returns ${late}`
          // Never dispatched again while the old call may still run, and never settled on a guess.
          expect(r.whileRunning.overlapping, label).toBe(0)
          if (late !== 'before the takeover') {
            expect(tool(r.whileRunning), label).not.toBe('INTENT')
            expect(terminal(r.whileRunning.job.status), label).toBe(false)
          }
          for (const state of [r.whileRunning, r.final]) {
            if (terminal(state.job.status))
              expect(
                state.effects.filter((e) => e.status === 'DISPATCHED' || e.status === 'UNKNOWN'),
                label,
              ).toEqual([])
          }
          if (late !== 'never') {
            // The truth arrived: nothing is left for an operator.
            expect(tool(r.final), label).toBe('DONE')
            expect(r.final.job.status, label).not.toBe('UNKNOWN')
          }
        },
      ),
      { numRuns: RUNS, seed: SEED, path: process.env.FC_PATH },
    )
  }, 120_000)

  /** A run claimed by the process liveness will misjudge, and the drain tick that may release it. */
  async function claimedByTheCutOff(reconcile?: () => Promise<ReconcileResult>) {
    const name = `ro${++n}`
    const c = consumer({ contract: chat, name, types: ['generate'], maxAttempts: 3, leaseMs: LEASE_MS, reconcile }).run(async () => {})
    const server = createServer({ contract: chat, consumers: [c], store: base })
    const { id: sessionId } = await server.sessions.create('u')
    await server.append(sessionId, { type: 'generate', payload: {} })
    const [old] = await claimJobs(base.db, { consumers: [name], owner: 'cut-off', ownerKey: CUT_OFF, leaseMs: { [name]: LEASE_MS }, limit: 1 })
    const host: RuntimeHost = {
      store: base,
      contract: chat,
      consumers: new Map([[name, c as never]]),
      append: () => Promise.reject(new Error('unused')),
    }
    const drain = () => drainOnce(host, { owner: 'drain', liveness: misjudging, graceMs: LEASE_MS, forceOut: () => {} })
    return { name, c, old, drain }
  }

  /** A run claimed by the process liveness will misjudge, released by one drain tick with nothing in flight. */
  async function released() {
    const { name, old, drain } = await claimedByTheCutOff()
    await drain()
    expect(await jobOf(old.id)).toMatchObject({ status: 'ACTIVE', attempt: old.attempt })
    return { name, old, fence: { jobId: old.id, attempt: old.attempt } }
  }

  it('a released owner that runs on dispatches nothing more, and marks nothing its successor will need', async () => {
    const { name, old, fence } = await released()
    let calls = 0
    const refused = await runEffect(base.db, { fence, cancelVersion: old.cancelVersion, signal: new AbortController().signal }, 'tool', async () => {
      calls++
    }).then(
      () => 'dispatched',
      (e: { code?: string }) => e.code,
    )
    expect(refused).toBe('fenced')
    expect(calls).toBe(0)
    // The successor finds the intent, not a cancellation, and dispatches it.
    const [next] = await claimJobs(base.db, { consumers: [name], owner: 'w2', leaseMs: { [name]: LEASE_MS }, limit: 1 })
    expect(next.attempt).toBe(old.attempt + 1)
    const value = await runEffect(
      base.db,
      { fence: { jobId: next.id, attempt: next.attempt }, cancelVersion: next.cancelVersion, signal: new AbortController().signal },
      'tool',
      async () => 'sent once',
    )
    expect(value).toBe('sent once')
  })

  it('a run inside an overlapSafe effect (a model call) is released at once, and its successor dispatches it again on "not done"', async () => {
    // What keeps a killed worker's answer going within a second (liveness is the connection):
    // the call may run twice at once under its key with no harm.
    const { name, c, old, drain } = await claimedByTheCutOff(async () => ({ done: false }))
    const entered = gate()
    const running = runEffect(
      base.db,
      { fence: { jobId: old.id, attempt: old.attempt }, cancelVersion: old.cancelVersion, signal: new AbortController().signal },
      'model',
      async () => {
        entered.open()
        return new Promise<string>(() => {}) // the owner's call runs on
      },
      { overlapSafe: true },
    )
    void running.catch(() => {})
    await entered.promise
    await drain()
    const [next] = await claimJobs(base.db, { consumers: [name], owner: 'w2', leaseMs: { [name]: LEASE_MS }, limit: 1 })
    expect(next?.attempt).toBe(old.attempt + 1)
    const value = await runEffect(
      base.db,
      {
        fence: { jobId: next.id, attempt: next.attempt },
        cancelVersion: next.cancelVersion,
        signal: new AbortController().signal,
        reconcile: c.options.reconcile,
      },
      'model',
      async () => 'answered',
      { overlapSafe: true },
    )
    expect(value).toBe('answered')
    const history = await query<{ reason: string }>(base.db, sql`select reason from a2_job_transitions where job_id = ${old.id} order by id`)
    expect(history.map((h) => h.reason)).toContain('OWNER_DIED')
    expect(history.map((h) => h.reason)).toContain('EFFECT_RECONCILED_NOT_DONE')
  })

  it('an effect of a released attempt that the release did not see (its snapshot) is UNKNOWN on "not done"', async () => {
    // The dispatch committed while the release's statement ran: released with the effect in flight.
    const { name, old } = await released()
    await query(
      base.db,
      sql`insert into a2_effects (job_id, key, status, attempt, cancel_version) values (${old.id}, 'tool', 'DISPATCHED', ${old.attempt}, 0)`,
    )
    const [next] = await claimJobs(base.db, { consumers: [name], owner: 'w2', leaseMs: { [name]: LEASE_MS }, limit: 1 })
    const outcome = await applyVerdict(base.db, next.id, next.attempt, 'tool', { done: false }).then(
      () => 'not done',
      (e: unknown) => (e instanceof EffectUnknown ? 'unknown' : String(e)),
    )
    expect(outcome).toBe('unknown')
    expect(await effectsOf(old.id)).toMatchObject([{ key: 'tool', status: 'UNKNOWN' }])
  })
})
