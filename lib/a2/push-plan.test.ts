/**
 * a2_push's duplicate check costs the ids it checks, not the session's length, whatever plan
 * Postgres caches for it. The check runs inside a plpgsql function, whose statements are
 * prepared: after five calls Postgres may keep a generic plan, chosen without the session's
 * id or the ids' count. Written as `id in (select …)` that generic plan was a hash join over
 * every event of the session (measured on 100k events of one session, not yet analyzed:
 * 16–24 ms a push against 0.05 ms), so a Stop in a long chat paid for its history until the
 * next analyze. Here the plan is forced generic and the session has grown unanalyzed, which
 * is that case made certain rather than waited for. The read a push makes before it (its
 * admission's, push-context.ts) is a prepared statement too, and looked the ids up the same way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql, TransactionRollbackError } from 'drizzle-orm'
import type { Store } from '@/lib/a2/server'
import { query } from './internal/store'
import { readPushContext } from './internal/push-context'
import { createTestDb, layers, type TestDb } from '@/test/db'

const EVENTS = 20_000

/** Rows of a2_events this transaction has read so far, by any scan. */
async function eventsRead(tx: Parameters<Parameters<Store['db']['transaction']>[0]>[0]): Promise<number> {
  const [row] = await query<{ read: string }>(
    tx,
    sql`select coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) as read from pg_stat_xact_user_tables where relname = 'a2_events'`,
  )
  return Number(row?.read ?? 0)
}

describe.each(layers)('a2_push on %s', (kind) => {
  let testDb: TestDb
  let store: Store

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    store = await testDb.open()
    await query(store.db, sql`insert into a2_sessions (id, owner, head) values ('long', 'u', ${EVENTS})`)
    await query(
      store.db,
      sql`insert into a2_events (session_id, index, id, type, payload)
          select 'long', g, 'e' || g, 'chunk', '{}'::jsonb from generate_series(0, ${EVENTS - 1}) g`,
    )
  }, 60_000)
  afterAll(async () => {
    await testDb?.drop()
  })

  it('looks a client id up by its key under a generic plan, not through the whole session', async () => {
    let read = Number.NaN
    await store.db
      .transaction(async (tx) => {
        await query(tx, sql`set local plan_cache_mode = force_generic_plan`)
        const before = await eventsRead(tx)
        const [answer] = await query<{ o_refused: string | null; o_start: number }>(
          tx,
          sql`select * from a2_push('long', 'u', '[{"id":"fresh","type":"note","payload":{}}]'::jsonb, '["fresh"]'::jsonb, 2,
                                    null, null, '[]'::jsonb, '[]'::jsonb, 'a2_plan_test', 16)`,
        )
        expect(answer).toMatchObject({ o_refused: null, o_start: EVENTS })
        const [again] = await query<{ o_refused: string | null }>(
          tx,
          sql`select * from a2_push('long', 'u', '[{"id":"e7","type":"note","payload":{}}]'::jsonb, '["e7"]'::jsonb, 2,
                                    null, null, '[]'::jsonb, '[]'::jsonb, 'a2_plan_test', 16)`,
        )
        expect(again?.o_refused).toBe('duplicate')
        // The read a push makes first (its admission's and abortOn's) looks for the same ids.
        for (let i = 0; i < 6; i++) {
          const context = await readPushContext(tx, 'long', { owner: 'u', ids: ['e9'] })
          expect(context.events.map((e) => e.index)).toEqual([9])
        }
        read = (await eventsRead(tx)) - before
        tx.rollback() // nothing of this test's pushes stays
      })
      .catch((error: unknown) => {
        if (!(error instanceof TransactionRollbackError)) throw error
      })
    // Eight lookups, one id each: a few index entries apiece, never the session's 20,000.
    expect(read).toBeLessThan(20)
  })
})
