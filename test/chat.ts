/**
 * The chat's integration tests' shared setup (lib/chat/*.integration.test.ts): a store per
 * describe block, a question asked in a new session, and the log once its answer finished.
 */
import type { A2Server } from '@/lib/a2/server'
import type { Chat, ChatEvent } from '@/lib/chat/contract'
export { useTestStore } from './db'
import { waitUntil } from '@/lib/a2/testing'

/** A new session of `owner` with `text` asked in one push: message `m1`, its generate `g1`. */
export async function ask(server: A2Server<Chat>, owner: string, text: string): Promise<string> {
  const { id } = await server.sessions.create(owner)
  await server.push(id, owner, {
    events: [
      { id: 'm1', type: 'message', payload: { text } },
      { id: 'g1', type: 'generate', payload: { for: 'm1' } },
    ],
  })
  return id
}

/** The session's log once an answer in it has finished (polls the log, never a sleep). */
export async function logWhenFinished(server: A2Server<Chat>, sessionId: string, owner: string): Promise<ChatEvent[]> {
  return (await waitUntil(async () => {
    const events = await server.read(sessionId, owner, { limit: 10_000 })
    return events.some((e) => e.type === 'finished') ? events : undefined
  }, 'the answer to finish')) as ChatEvent[]
}
