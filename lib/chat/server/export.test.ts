/** A chat as a file: every version kept, each answer as its owner saw it (a stopped one cut at its Stop). */
import { describe, expect, it } from 'vitest'
import type { ChatEvent } from '../contract'
import { foldChat } from '../fold/reducer'
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

describe('exporting an answer of parts', () => {
  /** Reasoning, then three calls: one done, one a Stop left unknown, one whose input only the reader saw (and more reasoning after the cut). */
  function partsAnswer(): ChatEvent[] {
    index = 0
    return [
      ev('message', { text: 'tell the team' }, 'm1'),
      ev('generate', { for: 'm1' }, 'g1'),
      ev('reasoning', { of: 'g1', attempt: 1, delta: 'First list the notes,\nthen post.' }), // 2
      ev('tool.call', { of: 'g1', attempt: 1, call: 'call_a', tool: 'listNotes', input: { limit: 3 } }), // 3
      ev('tool.state', { of: 'g1', call: 'call_a', tool: 'listNotes', state: 'done', input: { limit: 3 }, result: ['buy milk'] }), // 4
      ev('tool.call', { of: 'g1', attempt: 1, call: 'call_b', tool: 'sendWebhook', input: { message: 'ship it' } }), // 5
      ev('tool.input', { of: 'g1', attempt: 1, call: 'call_c', tool: 'sendWebhook', delta: '{"message":"ag' }), // 6
      ev('cancelled', { of: 'g1', lastSeenIndex: 6 }),
      ev('reasoning', { of: 'g1', attempt: 1, delta: 'unseen reasoning' }),
      ev('tool.state', { of: 'g1', call: 'call_b', tool: 'sendWebhook', state: 'unknown', input: { message: 'ship it' }, settle: 'operator' }),
      ev('finished', { of: 'g1', attempt: 1, reason: 'cancelled' }),
    ]
  }

  it('as JSON: the reasoning as the reader saw it (cut), and each tool call with its input, state and result', () => {
    const chat = exportChat({ id: 's', title: 'Team' }, foldChat(partsAnswer()), new Date('2026-12-03T00:00:00Z'))
    const answer = chat.turns[1].versions[0]
    expect(answer.parts).toEqual([
      { kind: 'reasoning', text: 'First list the notes,\nthen post.' },
      { kind: 'tool', call: 'call_a', tool: 'listNotes', input: { limit: 3 }, state: 'done', shows: 'Done', result: ['buy milk'] },
      {
        kind: 'tool',
        call: 'call_b',
        tool: 'sendWebhook',
        input: { message: 'ship it' },
        state: 'unknown',
        shows: 'May have happened',
        detail: expect.stringContaining('operator'),
        settle: 'operator',
      },
      {
        kind: 'tool',
        call: 'call_c',
        tool: 'sendWebhook',
        inputText: '{"message":"ag',
        state: 'input',
        shows: 'Not started',
        detail: expect.any(String),
      },
    ])
    expect(JSON.stringify(chat)).not.toContain('unseen reasoning')
  })

  it('as Markdown: the reasoning quoted, each call under its own line with its state, input and result', () => {
    const md = exportMarkdown(exportChat({ id: 's', title: 'Team' }, foldChat(partsAnswer()), new Date('2026-12-03T00:00:00Z')))
    expect(md).toContain('> **Reasoning**\n>\n> First list the notes,\n> then post.')
    expect(md).toContain('**Tool call `listNotes`: Done**')
    expect(md).toContain('Input:\n\n```json\n{\n  "limit": 3\n}\n```')
    expect(md).toContain('Result:\n\n```json\n[\n  "buy milk"\n]\n```')
    expect(md).toMatch(/\*\*Tool call `sendWebhook`: May have happened\*\* — [^\n]*operator/)
    expect(md).toContain('Input (as streamed):\n\n```\n{"message":"ag\n```')
    expect(md).not.toContain('unseen reasoning')
    // The parts come before the answer's text, in log order.
    expect(md.indexOf('Reasoning')).toBeLessThan(md.indexOf('listNotes'))
    expect(md.indexOf('listNotes')).toBeLessThan(md.indexOf('ship it'))
  })
})
