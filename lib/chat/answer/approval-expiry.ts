/**
 * Waits nobody decided in time expire as denied: the sweep appends a `tool.decision` of
 * `expired` for each wait past its `expiresAt` (A2_APPROVAL_TIMEOUT_MS after it began) that no
 * decision and no ending followed, and the approvals consumer goes on with it as with a "Deny"
 * (approvals.ts). Every process that runs a worker sweeps; the decision's id is the wait's
 * (`expired-<wait id>`), so two sweeps, or a sweep racing a user's decision, leave one event that
 * counts (the first in log order: tools/approval-rule.ts).
 *
 * It also ends the waits a Stop ended: a Stop while a call waits cuts the answer at once in every
 * tab (the fold: stopped, the call "Not started"), and the sweep writes what the log still lacks,
 * the call's `not-started` state and the answer's one `finished`, under ids taken from the wait,
 * so two sweeps write them once. A Stop starts no run of its own for this (a Stop of any answer
 * would: a run per Stop, for the rare one that waits), and a Stop that came after the decision
 * that continued the answer is that continuation's to end (its abortOn): the sweep applies the
 * rule every run applies (tools/approval-rule.ts `waitEnding`) to the log before the Stop.
 *
 * It reads only the app's partial index of waits (db/migrations/0005), a week back from now: a
 * wait past that is refused a decision by admission (expired) and is left as it is.
 */
import { sql } from 'drizzle-orm'
import { isA2Error } from '@/lib/a2'
import type { A2Server } from '@/lib/a2/server'
import type { Chat, ChatEvent } from '../contract'
import { chatFold } from '../fold/checkpoint'
import { answerOf, waitEnding } from '../tools/approval-rule'

const LOOK_BACK_MS = 7 * 24 * 60 * 60 * 1000

interface ExpiredWait {
  session_id: string
  id: string
  of: string
  call: string
  args: string
  owner: string
  /** The first Stop of the answer after the wait, if any: its index and id. */
  stop_index: number | null
  stop_id: string | null
}

/** Appends the `expired` decision of every wait past its time, and ends the waits a Stop ended; how many of each. */
export async function sweepWaits(server: A2Server<Chat>, now = Date.now()): Promise<{ expired: number; stopped: number }> {
  const result = (await server.store.db.execute(sql`
    select w.session_id, w.id, w.payload->>'of' as of, w.payload->>'call' as call, w.payload->'approval'->>'args' as args, s.owner,
           c.index as stop_index, c.id as stop_id,
           ((w.payload->'approval'->>'expiresAt')::bigint) <= ${now} as due
    from a2_events w
    join a2_sessions s on s.id = w.session_id
    left join lateral (
      select c.index, c.id from a2_events c
      where c.session_id = w.session_id and c.index > w.index and c.type = 'cancelled' and c.payload->>'of' = w.payload->>'of'
      order by c.index limit 1
    ) c on true
    where w.type = 'tool.state' and w.payload->>'state' = 'awaiting-approval'
      and ((w.payload->'approval'->>'expiresAt')::bigint) > ${now - LOOK_BACK_MS}
      and not exists (
        select 1 from a2_events f
        where f.session_id = w.session_id and f.index > w.index and f.type = 'finished' and f.payload->>'of' = w.payload->>'of')
      and (c.index is not null or (
        ((w.payload->'approval'->>'expiresAt')::bigint) <= ${now}
        and not exists (
          select 1 from a2_events d
          where d.session_id = w.session_id and d.index > w.index and d.type = 'tool.decision'
            and d.payload->>'of' = w.payload->>'of' and d.payload->>'call' = w.payload->>'call')))
    order by w.session_id, w.index
    limit 100`)) as unknown
  const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as ExpiredWait[]
  let expired = 0
  let stopped = 0
  const ended = new Set<string>()
  for (const wait of rows) {
    if (wait.stop_index !== null) {
      const answer = `${wait.session_id}\u0000${wait.of}`
      if (ended.has(answer)) continue
      ended.add(answer)
      if (await endStoppedWait(server, wait)) stopped++
      continue
    }
    if (
      await appendOnce(server, wait.session_id, {
        id: `expired-${wait.id}`,
        type: 'tool.decision',
        payload: { of: wait.of, call: wait.call, decision: 'expired', args: wait.args, cancelVersion: 0 },
      })
    )
      expired++
  }
  return { expired, stopped }
}

/** The waits of one answer a Stop ended: each call "Not started", then the answer's `finished`, if the Stop came first. */
async function endStoppedWait(server: A2Server<Chat>, wait: ExpiredWait): Promise<boolean> {
  const { state } = await server.fold(wait.session_id, wait.owner, chatFold, { before: wait.stop_index! })
  const answer = answerOf(state, wait.of)
  const ending = waitEnding(answer, { type: 'cancelled', payload: { of: wait.of, lastSeenIndex: wait.stop_index! } } as ChatEvent)
  if (!answer || ending.ends !== 'stop') return false
  for (const part of ending.calls)
    await appendOnce(server, wait.session_id, {
      id: `not-started-${wait.stop_id}-${part.call}`.slice(0, 64),
      type: 'tool.state',
      payload: { of: answer.id, call: part.call, tool: part.tool, state: 'not-started', input: part.input },
    })
  return appendOnce(server, wait.session_id, {
    id: `finished-${wait.stop_id}`.slice(0, 64),
    type: 'finished',
    payload: { of: answer.id, attempt: Math.max(1, answer.attempt), reason: 'cancelled' },
  })
}

/** Appends an event under an id of its own; false when it is there already (another sweep) or the chat was deleted. */
async function appendOnce(server: A2Server<Chat>, sessionId: string, event: Parameters<A2Server<Chat>['append']>[1]): Promise<boolean> {
  try {
    const [written] = await server.append(sessionId, event)
    return written !== undefined
  } catch (error) {
    if (isA2Error(error, 'conflict') || isA2Error(error, 'not_found')) return false
    throw error
  }
}

/** Sweeps every `everyMs` until stopped; a failed sweep is logged and tried at the next tick. */
export function startApprovalExpiry(server: A2Server<Chat>, everyMs = 5_000): { stop(): void } {
  let running = false
  const timer = setInterval(() => {
    if (running) return
    running = true
    sweepWaits(server)
      .catch((error) => console.error(`[a2] approval expiry sweep failed: ${error instanceof Error ? error.message : String(error)}`))
      .finally(() => (running = false))
  }, everyMs)
  timer.unref()
  return { stop: () => clearInterval(timer) }
}
