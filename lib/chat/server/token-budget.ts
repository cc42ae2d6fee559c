/**
 * The daily token budget: a user's model tokens over the last 24 hours stay under
 * A2_DAILY_TOKENS_PER_USER. Past it, no new answer until the oldest counted spend is a day old
 * (Retry-After). An answer running when the budget runs out finishes; the next one waits.
 */
import { sql } from 'drizzle-orm'
import type { Executor } from '@/lib/a2/server'
import { env } from '@/lib/env'
import { rateLimited } from '@/lib/http/limits'
import { rowsOf } from '@/lib/store/rows'

/**
 * The events that carry what a model call cost (`usage`): each answer's `finished`, and the first
 * wait of a call that stopped for approval (it writes no `finished`: the answer goes on after).
 */
const SPENDS = sql`(e.type = 'finished' or (e.type = 'tool.state' and e.payload ? 'usage'))`

const TOKENS = sql`(coalesce((e.payload->'usage'->>'inputTokens')::bigint, 0) + coalesce((e.payload->'usage'->>'outputTokens')::bigint, 0))`

/** What `owner` spent over the last 24 hours, and in how many ms the oldest of it stops counting (none spent: undefined). */
export async function tokensSpentToday(db: Executor, owner: string): Promise<{ used: number; oldestMsLeft?: number }> {
  const [row] = rowsOf<{ used: string; oldest_ms: string | null }>(
    await db.execute(sql`
      select coalesce(sum(e.tokens), 0)::bigint::text as used,
             (extract(epoch from (min(e.created_at) + interval '1 day' - now())) * 1000)::bigint::text as oldest_ms
      from (
        select e.created_at, ${TOKENS} as tokens from a2_events e
        where ${SPENDS} and e.created_at > now() - interval '1 day'
          and e.session_id in (select id from a2_sessions where owner = ${owner})
        union all -- tokens spent in chats deleted since: deleting a chat gives no budget back
        select at, tokens from spent_tokens
        where owner = ${owner} and at > now() - interval '1 day'
      ) e`),
  )
  return { used: Number(row.used), oldestMsLeft: row.oldest_ms === null ? undefined : Number(row.oldest_ms) }
}

/** Refuses a new answer (429, Retry-After) once `owner` has spent today's budget. */
export async function checkTokenBudget(db: Executor, owner: string): Promise<void> {
  const budget = env().A2_DAILY_TOKENS_PER_USER
  const { used, oldestMsLeft } = await tokensSpentToday(db, owner)
  if (used >= budget) {
    throw rateLimited(`you have used today's ${budget} model tokens (${used})`, Math.max(1_000, oldestMsLeft ?? 60_000))
  }
}

/**
 * Keeps what a chat's answers spent in the last day when the chat is deleted (inside the
 * delete's transaction): the daily budget counts it until it is a day old.
 */
export async function keepSpentTokens(tx: Executor, sessionId: string, owner: string): Promise<void> {
  await tx.execute(sql`
    insert into spent_tokens (owner, at, tokens)
    select ${owner}, e.created_at, ${TOKENS}::int
    from a2_events e
    where e.session_id = ${sessionId} and ${SPENDS} and e.created_at > now() - interval '1 day'
      and e.payload ? 'usage'`)
}
