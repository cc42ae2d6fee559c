/**
 * Waits nobody decided in time expire as denied: the sweep appends a `tool.decision` of
 * `expired` for each wait past its `expiresAt` (A2_APPROVAL_TIMEOUT_MS after it began) that no
 * decision and no ending followed, and the approvals consumer goes on with it as with a "Deny"
 * (approvals.ts). Every process that runs a worker sweeps; the decision's id is the wait's
 * (`expired-<wait id>`), so two sweeps, or a sweep racing a user's decision, leave one event that
 * counts (the first in log order: tools/approval-rule.ts).
 *
 * It reads only the app's partial index of waits (db/migrations/0005), a week back from now: a
 * wait past that is refused a decision by admission (expired) and is left as it is.
 */
import { sql } from 'drizzle-orm'
import { isA2Error } from '@/lib/a2'
import type { A2Server } from '@/lib/a2/server'
import type { Chat } from '../contract'

const LOOK_BACK_MS = 7 * 24 * 60 * 60 * 1000

interface ExpiredWait {
  session_id: string
  id: string
  of: string
  call: string
  args: string
}

/** Appends the `expired` decision of every wait past its time; how many it appended. */
export async function expireWaits(server: A2Server<Chat>, now = Date.now()): Promise<number> {
  const result = (await server.store.db.execute(sql`
    select w.session_id, w.id, w.payload->>'of' as of, w.payload->>'call' as call, w.payload->'approval'->>'args' as args
    from a2_events w
    where w.type = 'tool.state' and w.payload->>'state' = 'awaiting-approval'
      and ((w.payload->'approval'->>'expiresAt')::bigint) <= ${now}
      and ((w.payload->'approval'->>'expiresAt')::bigint) > ${now - LOOK_BACK_MS}
      and not exists (
        select 1 from a2_events d
        where d.session_id = w.session_id and d.index > w.index
          and ((d.type = 'tool.decision' and d.payload->>'of' = w.payload->>'of' and d.payload->>'call' = w.payload->>'call')
            or (d.type = 'finished' and d.payload->>'of' = w.payload->>'of')
            or (d.type = 'cancelled' and d.payload->>'of' = w.payload->>'of')))
    order by 4
    limit 100`)) as unknown
  const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as ExpiredWait[]
  let appended = 0
  for (const wait of rows) {
    try {
      await server.append(wait.session_id, {
        id: `expired-${wait.id}`,
        type: 'tool.decision',
        payload: { of: wait.of, call: wait.call, decision: 'expired', args: wait.args, cancelVersion: 0 },
      })
      appended++
    } catch (error) {
      // Another sweep appended it first, or the session was deleted meanwhile.
      if (!isA2Error(error, 'conflict') && !isA2Error(error, 'not_found')) throw error
    }
  }
  return appended
}

/** Sweeps every `everyMs` until stopped; a failed sweep is logged and tried at the next tick. */
export function startApprovalExpiry(server: A2Server<Chat>, everyMs = 5_000): { stop(): void } {
  let running = false
  const timer = setInterval(() => {
    if (running) return
    running = true
    expireWaits(server)
      .catch((error) => console.error(`[a2] approval expiry sweep failed: ${error instanceof Error ? error.message : String(error)}`))
      .finally(() => (running = false))
  }, everyMs)
  timer.unref()
  return { stop: () => clearInterval(timer) }
}
