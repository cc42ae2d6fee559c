/**
 * The `finished` the `onEnded` hook writes for an answer its attempt did not finish (a dead worker,
 * settled by the drain) bills what the model streamed of every part: the reasoning and the
 * tool's input, like the text.
 */
import { describe, expect, it } from 'vitest'
import type { EndedRun } from '@/lib/a2/server'
import { countText } from '@/lib/ai/usage'
import type { Chat, ChatEvent } from '../contract'
import { onAnswerEnded, writeMissingFinished } from './unfinished'
import { foldChat } from '../fold/reducer'

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
    } as unknown as EndedRun<Chat, 'generate'>
    await writeMissingFinished(run)
    const [finished] = appended as Array<{ payload: { usage: { outputTokens: number } } }>
    expect(finished.payload.usage.outputTokens).toBe(countText('Sent.') + countText(reasoning) + countText(input))
  })
})

describe('the `onEnded` hook of a run the drain settled with a tool call in flight', () => {
  it('writes each call the answer still shows running with the state its stored effect says, before the one finished', async () => {
    const message = at(0, 'message', { text: 'tell the team three times' })
    const trigger = at(1, 'generate', { for: 'e0' }) as Extract<ChatEvent, { type: 'generate' }>
    const running = (index: number, call: string) =>
      at(index, 'tool.state', { of: 'e1', call, tool: 'sendWebhook', state: 'running', input: { message: call } })
    const later = [
      running(2, 'had'),
      running(3, 'missed'),
      running(4, 'unsure'),
      running(5, 'ended'),
      at(6, 'tool.state', { of: 'e1', call: 'ended', tool: 'sendWebhook', state: 'done', input: { message: 'ended' }, result: 'ok' }),
    ]
    const effects = [
      { key: 'model', status: 'UNKNOWN', result: null, error: null },
      { key: 'tool:sendWebhook:had', status: 'DONE', result: { value: { status: 200 } }, error: null },
      { key: 'tool:sendWebhook:missed', status: 'FAILED', result: null, error: { message: 'aborted', reconciled: 'not done' } },
      { key: 'tool:sendWebhook:unsure', status: 'UNKNOWN', result: null, error: null },
      { key: 'tool:sendWebhook:ended', status: 'DONE', result: { value: 'ok' }, error: null },
    ]
    const appended: Array<{ type: string; payload: Record<string, unknown> }> = []
    const run = {
      jobId: 7,
      sessionId: 's',
      attempt: 1,
      trigger,
      status: 'CANCELLED',
      reason: 'DRAINED_AFTER_OWNER_LOST',
      dispatched: effects.map((e) => e.key),
      append: async (...events: Array<{ type: string; payload: Record<string, unknown> }>) => {
        appended.push(...events)
        return events
      },
      read: async () => later,
      fold: async () => ({ state: foldChat([message]), index: 0 }),
    } as unknown as EndedRun<Chat, 'generate'>
    await onAnswerEnded(async (jobId) => (jobId === 7 ? effects : []))(run)
    expect(appended.map((e) => e.type)).toEqual(['tool.state', 'tool.state', 'tool.state', 'finished'])
    expect(appended.slice(0, 3).map((e) => [e.payload.call, e.payload.state, e.payload.result, e.payload.settle])).toEqual([
      ['had', 'done', { status: 200 }, undefined],
      ['missed', 'cancelled', undefined, undefined],
      ['unsure', 'unknown', undefined, 'operator'],
    ])
  })
})
