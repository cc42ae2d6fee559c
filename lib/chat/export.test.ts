/** A chat as a file: every version kept, each answer as its owner saw it (a stopped one cut at its Stop). */
import { describe, expect, it } from 'vitest'
import type { ChatEvent } from './contract'
import { foldChat } from './reducer'
import { exportChat, exportMarkdown } from './export'

let index = 0
const ev = (type: ChatEvent['type'], payload: unknown, id = `e${index}`): ChatEvent =>
  ({ id, sessionId: 's', index: index++, type, payload, createdAt: '2026-01-01T00:00:00.000Z' }) as ChatEvent

function stoppedThenRegenerated(): ChatEvent[] {
  index = 0
  return [
    ev('message', { text: 'hello' }, 'm1'),
    ev('generate', { for: 'm1' }, 'g1'),
    ev('chunk', { of: 'g1', attempt: 1, delta: 'Hel' }), // 2
    ev('chunk', { of: 'g1', attempt: 1, delta: 'lo ' }), // 3
    ev('cancelled', { of: 'g1', lastSeenIndex: 3 }),
    ev('chunk', { of: 'g1', attempt: 1, delta: 'unseen' }),
    ev('finished', { of: 'g1', attempt: 1, reason: 'cancelled', usage: { inputTokens: 5, outputTokens: 3, counted: true } }),
    ev('generate', { for: 'm1', replaces: 'g1' }, 'g2'),
    ev('chunk', { of: 'g2', attempt: 1, delta: 'Hi!' }),
    ev('finished', { of: 'g2', attempt: 1, reason: 'stop' }),
  ]
}

describe('exporting a chat', () => {
  it('keeps both versions of the answer, the stopped one cut where its reader stopped it', () => {
    const chat = exportChat({ id: 's', title: 'Greeting' }, foldChat(stoppedThenRegenerated()), new Date('2026-12-03T00:00:00Z'))
    expect(chat.turns.map((t) => t.role)).toEqual(['user', 'assistant'])
    const answer = chat.turns[1]
    expect(answer.shown).toBe(1)
    expect(answer.versions).toMatchObject([
      { id: 'g1', text: 'Hello ', status: 'stopped', stoppedAfterIndex: 3, usage: { outputTokens: 3, counted: true } },
      { id: 'g2', text: 'Hi!', status: 'done', finishReason: 'stop' },
    ])
    expect(JSON.stringify(chat)).not.toContain('unseen')
  })

  it('as Markdown: each version under its own heading, the stopped one said to be stopped, nothing past its cut', () => {
    const md = exportMarkdown(exportChat({ id: 's', title: 'Greeting' }, foldChat(stoppedThenRegenerated()), new Date('2026-12-03T00:00:00Z')))
    expect(md).toContain('# Greeting')
    expect(md).toContain('## You\n\nhello')
    expect(md).toContain('## Assistant (version 1 of 2, not continued) — stopped\n\nHello ')
    expect(md).toContain('## Assistant (version 2 of 2)\n\nHi!')
    expect(md).not.toContain('unseen')
  })
})
