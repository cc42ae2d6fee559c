/** The model's history is bounded: newest turns first within the budget, the asked message always, a user turn first. */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { ModelMessage } from 'ai'
import type { ChatEvent } from '../contract'
import { estimateTokens, SYSTEM_PROMPT, toModelMessages } from './history'
import { answerText, foldChat, latestBranch, type ChatState } from '../fold/reducer'
import { pathTo } from '../fold/versions'

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

/** The history as first written: the whole branch built root first, then trimmed from its old end. */
function wholeBranchMessages(state: ChatState, forMessage: string, budgetTokens: number, answerSoFar = ''): ModelMessage[] {
  const relevant = state.turns.some((t) => t.id === forMessage) ? pathTo(state, forMessage) : latestBranch(state.turns)
  const all: Array<{ role: 'user' | 'assistant'; content: string }> = []
  for (const turn of relevant) {
    if (turn.kind === 'user') all.push({ role: 'user', content: turn.text })
    else if (answerText(turn)) all.push({ role: 'assistant', content: answerText(turn) })
  }
  let left = budgetTokens - estimateTokens(SYSTEM_PROMPT) - (answerSoFar ? estimateTokens(answerSoFar) : 0)
  let start = all.length
  while (start > 0) {
    const cost = estimateTokens(all[start - 1].content)
    if (cost > left && start < all.length) break
    left -= cost
    start--
  }
  while (start < all.length - 1 && all[start].role !== 'user') start++
  const messages: ModelMessage[] = all.slice(start)
  if (answerSoFar) messages.push({ role: 'assistant', content: answerSoFar })
  return messages
}

/** A chat with edits, regenerates, stopped and empty answers: each step names earlier events, as admission requires. */
const chatWithVersions = fc
  .array(
    fc.record({
      step: fc.constantFrom('send', 'send', 'edit', 'regenerate', 'unanswered'),
      pick: fc.nat(),
      words: fc.nat({ max: 60 }),
      answerWords: fc.nat({ max: 60 }),
    }),
    { maxLength: 40 },
  )
  .map((steps) => {
    const events: ChatEvent[] = []
    const messages: string[] = []
    const answers: string[] = []
    const add = (type: string, payload: unknown) => {
      const id = `e${events.length}`
      events.push({ id, sessionId: 's', index: events.length, type, payload, createdAt: '2026-12-01T00:00:00.000Z' } as ChatEvent)
      return id
    }
    const answer = (message: string, words: number) => {
      const g = add('generate', { for: message })
      answers.push(g)
      if (words > 0) add('chunk', { of: g, attempt: 1, delta: 'word '.repeat(words) })
      add('finished', { of: g, attempt: 1, reason: 'stop' })
    }
    for (const { step, pick, words, answerWords } of steps) {
      const text = `q${events.length} ` + 'x'.repeat(words * 5)
      if (step === 'edit' && messages.length > 0) {
        const m = add('message', { text, edits: messages[pick % messages.length] })
        messages.push(m)
        answer(m, answerWords)
      } else if (step === 'regenerate' && messages.length > 0) answer(messages[pick % messages.length], answerWords)
      else {
        const m = add('message', { text, ...(answers.length > 0 ? { after: answers[pick % answers.length] } : {}) })
        messages.push(m)
        if (step !== 'unanswered') answer(m, answerWords)
      }
    }
    return { events, messages }
  })

describe('the model history, walked back from the message', () => {
  it('is the history the whole branch gave, for every message, budget and answer so far', () => {
    fc.assert(
      fc.property(chatWithVersions, fc.integer({ min: 0, max: 600 }), fc.boolean(), ({ events, messages }, budget, continuing) => {
        const state = foldChat(events)
        const soFar = continuing ? 'an answer so far' : ''
        for (const forMessage of [...messages, 'not-in-the-log']) {
          expect(toModelMessages(state, forMessage, { budgetTokens: budget, answerSoFar: soFar })).toEqual(
            wholeBranchMessages(state, forMessage, budget, soFar),
          )
        }
      }),
      { seed: 20261202, numRuns: 200 },
    )
  })
})

describe('tool calls in the model history', () => {
  /** A log of events, numbered and stamped as the store would. */
  function log(...events: Array<[id: string, type: string, payload: unknown]>): ChatEvent[] {
    return events.map(
      ([id, type, payload], index) => ({ id, sessionId: 's', index, type, payload, createdAt: '2026-12-01T00:00:00.000Z' }) as ChatEvent,
    )
  }
  const call = (of: string, id: string, tool: string, input: unknown): [string, string, unknown] => [
    `${of}-${id}`,
    'tool.call',
    { of, attempt: 1, call: id, tool, input },
  ]
  const state = (of: string, id: string, tool: string, payload: object): [string, string, unknown] => [
    `${of}-${id}-s`,
    'tool.state',
    { of, call: id, tool, ...payload },
  ]
  /** Three turns: calls in every state, then an answer whose call a Stop cut away (the reader saw its input only). */
  const events = log(
    ['m1', 'message', { text: 'tell the team and list my notes' }],
    ['g1', 'generate', { for: 'm1' }],
    ['g1-r', 'reasoning', { of: 'g1', attempt: 1, delta: 'I should list the notes first.' }],
    call('g1', 'call_a', 'listNotes', { limit: 3 }),
    state('g1', 'call_a', 'listNotes', { state: 'done', result: ['buy milk'] }),
    call('g1', 'call_b', 'sendWebhook', { message: 'release is out' }),
    state('g1', 'call_b', 'sendWebhook', { state: 'unknown', settle: 'operator' }),
    call('g1', 'call_c', 'sendWebhook', { message: 'again' }),
    state('g1', 'call_c', 'sendWebhook', { state: 'failed', error: 'the receiver answered 500' }),
    call('g1', 'call_d', 'sendWebhook', { message: 'once more' }),
    state('g1', 'call_d', 'sendWebhook', { state: 'not-started' }),
    call('g1', 'call_e', 'sendWebhook', { message: 'stopped mid-call' }),
    state('g1', 'call_e', 'sendWebhook', { state: 'cancelled' }),
    ['g1-t', 'chunk', { of: 'g1', attempt: 1, delta: 'Your notes: buy milk.' }],
    ['g1-f', 'finished', { of: 'g1', attempt: 1, reason: 'stop' }],
    ['m2', 'message', { text: 'send it again', after: 'g1' }],
    ['g2', 'generate', { for: 'm2' }],
    ['g2-t', 'chunk', { of: 'g2', attempt: 1, delta: 'Sending.' }],
    ['g2-i', 'tool.input', { of: 'g2', attempt: 1, call: 'call_f', tool: 'sendWebhook', delta: '{"message":"rel' }],
    call('g2', 'call_f', 'sendWebhook', { message: 'release' }),
    ['g2-c', 'cancelled', { of: 'g2', lastSeenIndex: 18 }],
    ['g2-f', 'finished', { of: 'g2', attempt: 1, reason: 'cancelled' }],
    ['m3', 'message', { text: 'what happened?', after: 'g2' }],
  )

  it('sends each earlier call the reader saw as an assistant tool-call and a tool result that says what is known, never a made-up success', () => {
    const messages = toModelMessages(foldChat(events), 'm3', { budgetTokens: 100_000 })
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user', 'assistant', 'user'])
    const calls = messages[1].content as Array<{ type: string; toolCallId: string; toolName: string; input: unknown }>
    expect(calls.map((c) => [c.type, c.toolCallId, c.toolName, c.input])).toEqual([
      ['tool-call', 'call_a', 'listNotes', { limit: 3 }],
      ['tool-call', 'call_b', 'sendWebhook', { message: 'release is out' }],
      ['tool-call', 'call_c', 'sendWebhook', { message: 'again' }],
      ['tool-call', 'call_d', 'sendWebhook', { message: 'once more' }],
      ['tool-call', 'call_e', 'sendWebhook', { message: 'stopped mid-call' }],
    ])
    const results = messages[2].content as Array<{ type: string; toolCallId: string; output: { type: string; value: unknown } }>
    expect(results.map((r) => [r.type, r.toolCallId])).toEqual(calls.map((c) => ['tool-result', c.toolCallId]))
    const [a, b, c, d, e] = results.map((r) => r.output)
    expect(a).toEqual({ type: 'json', value: ['buy milk'] })
    // Only the call that was done reads as a result; the others say what is known of them.
    for (const output of [b, c, d, e]) expect(output.type).not.toBe('json')
    expect(b.value).toMatch(/UNKNOWN/)
    expect(b.value).toMatch(/may have happened/)
    expect(c).toEqual({ type: 'error-text', value: expect.stringContaining('the receiver answered 500') })
    expect(d.value).toMatch(/not started/i)
    expect(e.value).toMatch(/did not happen/)
    expect(messages[3]).toEqual({ role: 'assistant', content: 'Your notes: buy milk.' })
    // The Stop cut the second answer's call away (its tool.call came after what the reader saw): only its text goes.
    expect(messages[5]).toEqual({ role: 'assistant', content: 'Sending.' })
    // Reasoning is never sent back.
    expect(JSON.stringify(messages)).not.toContain('I should list the notes first.')
  })

  it('counts the calls and their results in the context budget: an answer whose result does not fit is dropped whole', () => {
    const big = log(
      ['m1', 'message', { text: 'list my notes' }],
      ['g1', 'generate', { for: 'm1' }],
      call('g1', 'call_a', 'listNotes', {}),
      state('g1', 'call_a', 'listNotes', { state: 'done', result: ['n'.repeat(40_000)] }),
      ['g1-t', 'chunk', { of: 'g1', attempt: 1, delta: 'Here they are.' }],
      ['g1-f', 'finished', { of: 'g1', attempt: 1, reason: 'stop' }],
      ['m2', 'message', { text: 'thanks, and now?', after: 'g1' }],
    )
    const budget = 8_000 // the result alone is ~10k tokens
    const messages = toModelMessages(foldChat(big), 'm2', { budgetTokens: budget })
    const used = messages.reduce(
      (sum, m) => sum + estimateTokens(typeof m.content === 'string' ? m.content : JSON.stringify(m.content)),
      estimateTokens(SYSTEM_PROMPT),
    )
    expect(used).toBeLessThanOrEqual(budget)
    expect(messages).toEqual([{ role: 'user', content: 'thanks, and now?' }])
    // With room for it, the whole answer goes: its call, its result, its text.
    expect(toModelMessages(foldChat(big), 'm2', { budgetTokens: 100_000 }).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
    ])
  })
})
