/**
 * Deleting a chat for good: its log, jobs, their history and effects, its share links, its
 * files (rows and bytes: after the log's delete, so a refused delete keeps them), with
 * the tokens it spent kept for the day's budget. A running answer is stopped first, as the
 * person's own Stop would (a `cancelled` event: the worker's signal fires and the model call
 * closes), and given a moment to settle. A chat with a call an operator has yet to settle (an
 * UNKNOWN effect) is a 409 `unresolved`, with nothing written: that run is their evidence.
 */
import { A2Error } from '@/lib/a2'
import { keepSpentTokens } from './token-budget'
import type { ChatServer } from './chat-server'
import { deleteShareLinks } from './share'
import { getFiles } from '@/lib/files'

/** How long a delete waits for a stopped answer to settle before deleting anyway (the worker is then fenced out). */
const SETTLE_MS = 2_000

export async function deleteChat(server: ChatServer['server'], id: string, owner: string, options: { keepSpent?: boolean } = {}): Promise<void> {
  const session = await server.sessions.get(id, owner) // someone else's: not_found, as if missing
  // Asked before any Stop is appended, so a refused delete writes nothing; the delete checks again under its locks.
  if ((await server.sessions.unresolved([id])).length > 0) {
    throw new A2Error('unresolved', 'This chat has a call that may or may not have happened; it can be deleted once it is settled.')
  }
  // Runs already CANCELLING were stopped by their Stop; they only need the moment to settle.
  const running = (await server.sessions.openRuns([id])).filter((run) => run.consumer === 'generate')
  const unstopped = running.filter((run) => run.status === 'ACTIVE')
  if (unstopped.length > 0) {
    await server.append(
      id,
      ...unstopped.map((run) => ({ type: 'cancelled' as const, payload: { of: run.eventId, lastSeenIndex: session.head - 1 } })),
    )
  }
  const until = Date.now() + SETTLE_MS
  while (running.length > 0 && Date.now() < until && (await server.sessions.openRuns([id])).length > 0) {
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  await server.sessions.delete(id, owner, {
    within: async (tx) => {
      if (options.keepSpent !== false) await keepSpentTokens(tx, id, owner)
      await deleteShareLinks(tx, id)
    },
  })
  await (await getFiles()).deleteForSession(id)
}
