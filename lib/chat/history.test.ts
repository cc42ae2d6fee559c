/** The model's history is bounded: newest turns first within the budget, the asked message always, a user turn first. */
import { describe, expect, it } from 'vitest'
import type { ChatEvent } from './contract'
import { estimateTokens, SYSTEM_PROMPT, toModelMessages } from './history'
import { foldChat } from './reducer'

/** A session of `turns` exchanges, each a ~2,000-character question and answer. */
function session(turns: number): ChatEvent[] {
  const events: ChatEvent[] = []
  const at = () => new Date(0).toISOString()
  for (let t = 0; t < turns; t++) {
    const add = (id: string, type: string, payload: unknown) =>
      events.push({ id, sessionId: 's', index: events.length, type, payload, createdAt: at() } as ChatEvent)
    add(`m${t}`, 'message', { text: `question ${t} ` + 'q'.repeat(2_000) })
    add(`g${t}`, 'generate', { for: `m${t}` })
    add(`c${t}`, 'chunk', { of: `g${t}`, attempt: 1, delta: `answer ${t} ` + 'a'.repeat(2_000) })
    add(`f${t}`, 'finished', { of: `g${t}`, attempt: 1, reason: 'stop' })
  }
  return events
}

describe('the model history', () => {
  it('keeps the newest turns that fit the budget, and never more', () => {
    const history = session(200) // ~400k characters, ~100k tokens
    const budget = 8_000
    const messages = toModelMessages(foldChat(history), 'm199', { budgetTokens: budget })
    const used = messages.reduce((sum, m) => sum + estimateTokens(String(m.content)), estimateTokens(SYSTEM_PROMPT))
    expect(used).toBeLessThanOrEqual(budget)
    expect(messages.length).toBeGreaterThan(5) // it fills the budget, not just the last message
    expect(messages.at(-1)).toEqual({ role: 'user', content: expect.stringContaining('question 199') })
    expect(messages[0].role).toBe('user')
    // Contiguous and newest: the kept turns are the last ones, in order.
    const asked = messages.filter((m) => m.role === 'user').map((m) => Number(/question (\d+)/.exec(String(m.content))![1]))
    expect(asked).toEqual(asked.map((_, i) => 199 - (asked.length - 1) + i))
  })

  it('keeps the message being answered even when it alone is over the budget', () => {
    const messages = toModelMessages(foldChat(session(3)), 'm2', { budgetTokens: 10 })
    expect(messages).toEqual([{ role: 'user', content: expect.stringContaining('question 2') }])
  })

  it('sends the whole of a short conversation', () => {
    expect(toModelMessages(foldChat(session(2)), 'm1', { budgetTokens: 100_000 }).map((m) => m.role)).toEqual(['user', 'assistant', 'user'])
  })
})
