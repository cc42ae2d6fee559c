/**
 * The `finished` the ending hook writes for an answer its attempt did not finish (a dead worker,
 * settled by the drain) bills what the model streamed of every part: the reasoning and the
 * tool's input, like the text.
 */
import { describe, expect, it } from 'vitest'
import type { RunEnding } from '@/lib/a2/server'
import { countText } from '@/lib/ai/usage'
import type { Chat, ChatEvent } from './contract'
import { writeMissingFinished } from './ending'
import { foldChat } from './reducer'

const at = (index: number, type: ChatEvent['type'], payload: unknown) =>
  ({ id: `e${index}`, sessionId: 's', index, type, payload, createdAt: '2026-12-03T00:00:00.000Z' }) as ChatEvent

describe('writeMissingFinished', () => {
  it('counts the reasoning and the tool input an attempt streamed before it died, beside its text', async () => {
    const message = at(0, 'message', { text: 'think, then tell the team' })
    const trigger = at(1, 'generate', { for: 'e0' }) as Extract<ChatEvent, { type: 'generate' }>
    const reasoning = 'The user wants the team told; I will call the webhook tool. '
    const input = '{"message":"the release is out"}'
    const later = [
      at(2, 'reasoning', { of: 'e1', attempt: 1, delta: reasoning }),
      at(3, 'tool.input', { of: 'e1', attempt: 1, call: 'c1', tool: 'sendWebhook', delta: input }),
      at(4, 'chunk', { of: 'e1', attempt: 1, delta: 'Sent.' }),
    ]
    const appended: unknown[] = []
    const run = {
      jobId: 7,
      sessionId: 's',
      attempt: 1,
      trigger,
      status: 'CANCELLED',
      reason: 'DRAINED_AFTER_OWNER_LOST',
      dispatched: ['model'],
      append: async (...events: unknown[]) => {
        appended.push(...events)
        return events
      },
      read: async () => later,
      fold: async () => ({ state: foldChat([message]), index: 0 }),
    } as unknown as RunEnding<Chat, 'generate'>
    await writeMissingFinished(run)
    const [finished] = appended as Array<{ payload: { usage: { outputTokens: number } } }>
    expect(finished.payload.usage.outputTokens).toBe(countText('Sent.') + countText(reasoning) + countText(input))
  })
})
