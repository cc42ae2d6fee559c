/**
 * A long chat history written straight into a session's log (an append per event would take
 * minutes at 100k events): per answer a message (following the previous answer), its
 * generate, 19 chunks of `delta`, finished — or, with `messagesOnly`, user messages alone.
 * Used by the long-session test and by bench figure 8.
 */
import { sql } from 'drizzle-orm'
import type { Store } from '@/lib/a2/server'
import { query } from '@/lib/a2/internal/store/store'

export const EVENTS_PER_ANSWER = 22

export async function seedLongHistory(
  store: Store,
  sessionId: string,
  options: { answers: number; messagesOnly?: boolean; delta?: string },
): Promise<{ head: number; lastAnswer?: string }> {
  if (options.messagesOnly) {
    await query(
      store.db,
      sql`insert into a2_events (session_id, index, id, type, payload)
          select ${sessionId}, g, 'e' || g, 'message', jsonb_build_object('text', 'message ' || g) from generate_series(0, ${options.answers - 1}) g`,
    )
    await query(store.db, sql`update a2_sessions set head = ${options.answers} where id = ${sessionId}`)
    await analyzed(store, options.answers)
    return { head: options.answers }
  }
  const total = options.answers * EVENTS_PER_ANSWER
  await query(
    store.db,
    sql`insert into a2_events (session_id, index, id, type, payload)
        select ${sessionId}, g, 'e' || g,
          case when g % 22 = 0 then 'message' when g % 22 = 1 then 'generate' when g % 22 = 21 then 'finished' else 'chunk' end,
          case
            when g % 22 = 0 and g = 0 then jsonb_build_object('text', 'question ' || g / 22)
            when g % 22 = 0 then jsonb_build_object('text', 'question ' || g / 22, 'after', 'e' || (g - 21))
            when g % 22 = 1 then jsonb_build_object('for', 'e' || (g - 1))
            when g % 22 = 21 then jsonb_build_object('of', 'e' || (g - 20), 'attempt', 1, 'reason', 'stop')
            else jsonb_build_object('of', 'e' || (g - g % 22 + 1), 'attempt', 1, 'delta', ${options.delta ?? 'word '}::text)
          end
        from generate_series(0, ${total - 1}) g`,
  )
  await query(store.db, sql`update a2_sessions set head = ${total} where id = ${sessionId}`)
  await analyzed(store, total)
  return { head: total, lastAnswer: `e${total - 21}` }
}

/**
 * The log's statistics brought up to date after a bulk insert, as autovacuum does within a
 * minute of that many new rows. Without it, a connection that planned a statement while the
 * table was small keeps that plan for the whole run: bench figure 8's push to a seeded
 * 100k-event session took 16–32 ms instead of 1–8 (the same push to a fresh session: 1–4 ms),
 * most of that level's first-token gap. (a2_push's duplicate check no longer depends on the
 * statistics, session-length.test.ts; other plans may, and a real log is analyzed by autovacuum.)
 */
async function analyzed(store: Store, rows: number): Promise<void> {
  if (rows >= 1_000) await query(store.db, sql`analyze a2_events`)
}
