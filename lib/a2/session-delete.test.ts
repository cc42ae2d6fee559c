/**
 * Deleting a session keeps an operator's evidence: while one of its runs is UNKNOWN, or has an
 * effect UNKNOWN (a call that may or may not have happened, waiting for a verdict), the delete
 * is refused with `unresolved` (409) and nothing is deleted. Once the operator has settled it,
 * the delete goes through. Before, the delete erased the run, its effects and its history.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { consumer, createServer, isA2Error, type Store } from '@/lib/a2/server'
import { query } from '@/lib/a2/testing'
import { layers, useTestStore } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'

describe.each(layers)('deleting a session with an unresolved run on %s', (kind) => {
  const testStore = useTestStore(kind)
  let store: Store
  let server: ReturnType<typeof createServer<typeof chat>>
  beforeAll(() => {
    store = testStore()
    // No worker: the runs stay as the test sets them.
    const generate = consumer({ contract: chat, name: 'generate', types: ['generate'], abortOn: ['cancelled'] }).run(async () => {})
    server = createServer({ contract: chat, consumers: [generate], store })
  })

  /** A session whose run a dead worker left as `job` with its call's effect as `effect` (as the runtime records them). */
  async function sessionWithRun(job: string, effect: string) {
    const { id } = await server.sessions.create('olga')
    await server.push(id, 'olga', {
      events: [
        { type: 'message', payload: { text: 'hi' } },
        { id: `g-${id}`, type: 'generate', payload: {} },
      ],
    })
    const [row] = await query<{ id: number }>(store.db, sql`select id from a2_jobs where session_id = ${id}`)
    const jobId = Number(row.id)
    await store.db.execute(sql`update a2_jobs set status = ${job}, attempt = 1 where id = ${jobId}`)
    await store.db.execute(
      sql`insert into a2_job_transitions (job_id, attempt, from_status, to_status, reason) values (${jobId}, 1, 'ACTIVE', ${job}, 'EFFECT_UNKNOWN')`,
    )
    await store.db.execute(sql`insert into a2_effects (job_id, key, status, attempt, cancel_version) values (${jobId}, 'model', ${effect}, 1, 0)`)
    return { id, jobId }
  }

  const rows = async (id: string, jobId: number) =>
    (
      await query<Record<string, number>>(
        store.db,
        sql`select (select count(*)::int from a2_sessions where id = ${id}) as sessions,
                   (select count(*)::int from a2_events where session_id = ${id}) as events,
                   (select count(*)::int from a2_jobs where id = ${jobId}) as jobs,
                   (select count(*)::int from a2_job_transitions where job_id = ${jobId}) as transitions,
                   (select count(*)::int from a2_effects where job_id = ${jobId}) as effects`,
      )
    )[0]

  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => 'deleted',
      (error: unknown) => (isA2Error(error) ? `${error.code} ${error.status}` : String(error)),
    )

  it.each([
    ['an UNKNOWN run with its effect UNKNOWN', 'UNKNOWN', 'UNKNOWN'],
    ['an UNKNOWN run whose call may still be running', 'UNKNOWN', 'DISPATCHED'],
    ['an effect left UNKNOWN under a run being stopped', 'CANCELLING', 'UNKNOWN'],
  ])('refuses the delete of %s with unresolved (409) and deletes nothing', async (_, job, effect) => {
    const { id, jobId } = await sessionWithRun(job, effect)
    const before = await rows(id, jobId)
    expect(before).toEqual({ sessions: 1, events: 2, jobs: 1, transitions: 1, effects: 1 })
    expect(await refusal(server.sessions.delete(id, 'olga'))).toBe('unresolved 409')
    expect(await rows(id, jobId)).toEqual(before)
  })

  it('deletes it once an operator has settled the call', async () => {
    const { id, jobId } = await sessionWithRun('UNKNOWN', 'UNKNOWN')
    expect(await refusal(server.sessions.delete(id, 'olga'))).toBe('unresolved 409')
    // A Stop recorded against the run first, so the verdict ends it CANCELLED, not ACTIVE (a new attempt).
    await store.db.execute(sql`update a2_jobs set cancel_version = cancel_version + 1 where id = ${jobId}`)
    await server.operator.resolveEffect(jobId, 'model', { done: true, result: 'charged' }, 'operator')
    expect(await refusal(server.sessions.delete(id, 'olga'))).toBe('deleted')
    expect(await rows(id, jobId)).toEqual({ sessions: 0, events: 0, jobs: 0, transitions: 0, effects: 0 })
  })

  it('deletes a session whose runs are all settled, whatever their effects were', async () => {
    const { id, jobId } = await sessionWithRun('CANCELLED', 'CANCELLED_BEFORE_DISPATCH')
    expect(await refusal(server.sessions.delete(id, 'olga'))).toBe('deleted')
    expect(await rows(id, jobId)).toMatchObject({ sessions: 0, effects: 0 })
  })
})
