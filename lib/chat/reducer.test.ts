import { describe, expect, it } from 'vitest'
import type { ChatEvent } from './contract'
import { activeAnswer, answerText, foldChat, reduceChat, type AnswerTurn, type ChatState } from './reducer'

let index = 0
const ev = (type: ChatEvent['type'], payload: unknown, id = `e${index}`): ChatEvent =>
  ({ id, sessionId: 's', index: index++, type, payload, createdAt: '2026-01-01T00:00:00.000Z' }) as ChatEvent
const answers = (s: ChatState) => s.turns.filter((t): t is AnswerTurn => t.kind === 'assistant')

function conversation() {
  index = 0
  return [
    ev('message', { text: 'hello' }, 'm1'),
    ev('generate', { for: 'm1' }, 'g1'),
    ev('chunk', { of: 'g1', attempt: 1, delta: 'Hel' }), // 2
    ev('chunk', { of: 'g1', attempt: 1, delta: 'lo ' }), // 3
    ev('chunk', { of: 'g1', attempt: 1, delta: 'there' }), // 4
  ]
}

describe('the chat fold', () => {
  it('streams chunks, then compacts them into one string at the terminal event', () => {
    const log = [...conversation(), ev('finished', { of: 'g1', attempt: 1, reason: 'stop' })]
    const streaming = foldChat(log.slice(0, 5))
    expect(answers(streaming)[0]).toMatchObject({ status: 'streaming', chunks: [{ index: 2 }, { index: 3 }, { index: 4 }] })
    expect(activeAnswer(streaming)?.id).toBe('g1')
    const done = answers(foldChat(log))[0]
    expect(done).toMatchObject({ status: 'done', text: 'Hello there', chunks: [], finishReason: 'stop' })
    expect(activeAnswer(foldChat(log))).toBeUndefined()
  })

  it('cuts at lastSeenIndex and drops stragglers that land after the cut', () => {
    const log = conversation()
    const cut = [
      ...log,
      ev('cancelled', { of: 'g1', lastSeenIndex: 3 }),
      ev('chunk', { of: 'g1', attempt: 1, delta: ' straggler' }),
      ev('finished', { of: 'g1', attempt: 1, reason: 'cancelled' }),
    ]
    const answer = answers(foldChat(cut))[0]
    expect(answer.status).toBe('stopped')
    expect(answer.cutAt).toBe(3)
    expect(answerText(answer)).toBe('Hello ')
  })

  it('agrees with itself: the optimistic cut (cancel before its index is known) equals the authoritative refold', () => {
    const log = conversation()
    const inFlight = ev('chunk', { of: 'g1', attempt: 1, delta: ' unseen' }) // 5: arrived after the click
    const optimisticCancel = { ...ev('cancelled', { of: 'g1', lastSeenIndex: 4 }, 'c1'), index: -1 } as ChatEvent
    const optimistic = reduceChat(foldChat([...log, inFlight]), optimisticCancel)
    const confirmedCancel = { ...optimisticCancel, index: 6 } as ChatEvent
    const authoritative = foldChat([...log, inFlight, confirmedCancel, ev('finished', { of: 'g1', attempt: 1, reason: 'cancelled' })])
    expect(answerText(answers(optimistic)[0])).toBe('Hello there')
    expect(answerText(answers(authoritative)[0])).toBe(answerText(answers(optimistic)[0]))
  })

  it('keeps each generation’s own cut in one session', () => {
    const log = [
      ...conversation(),
      ev('cancelled', { of: 'g1', lastSeenIndex: 2 }),
      ev('finished', { of: 'g1', attempt: 1, reason: 'cancelled' }),
      ev('message', { text: 'again' }, 'm2'),
      ev('generate', { for: 'm2' }, 'g2'),
      ev('chunk', { of: 'g2', attempt: 1, delta: 'Second ' }),
      ev('chunk', { of: 'g2', attempt: 1, delta: 'answer' }),
      ev('finished', { of: 'g2', attempt: 1, reason: 'stop' }),
      // A late cancel for an answer that already ended changes nothing.
      ev('cancelled', { of: 'g2', lastSeenIndex: 5 }),
    ]
    const [first, second] = answers(foldChat(log))
    expect([first.status, answerText(first)]).toEqual(['stopped', 'Hel'])
    expect([second.status, answerText(second)]).toEqual(['done', 'Second answer'])
  })

  it('regenerate replaces the old answer in place; edit-and-resend truncates after the edited message', () => {
    const base = [...conversation(), ev('finished', { of: 'g1', attempt: 1, reason: 'stop' })]
    const regenerated = foldChat([
      ...base,
      ev('generate', { for: 'm1', replaces: 'g1' }, 'g2'),
      ev('chunk', { of: 'g2', attempt: 1, delta: 'New' }),
    ])
    expect(regenerated.turns.map((t) => t.id)).toEqual(['m1', 'g2'])
    expect(answerText(answers(regenerated)[0])).toBe('New')

    const edited = foldChat([...base, ev('message', { text: 'hello, edited', edits: 'm1' }, 'm2'), ev('generate', { for: 'm2' }, 'g3')])
    expect(edited.turns.map((t) => t.id)).toEqual(['m2', 'g3'])
  })

  it('keeps the text a dead attempt committed: the successor continues after it, and late chunks from the dead one vanish', () => {
    const log = [
      ...conversation(), // attempt 1 committed "Hello there" (2..4), then died
      ev('chunk', { of: 'g1', attempt: 2, delta: ', friend' }), // 5
      ev('chunk', { of: 'g1', attempt: 1, delta: 'zombie' }), // 6: fenced in practice; dropped here too
      ev('chunk', { of: 'g1', attempt: 2, delta: '.' }), // 7
    ]
    const streaming = answers(foldChat(log))[0]
    expect(streaming).toMatchObject({ attempt: 2, status: 'streaming' })
    expect(answerText(streaming)).toBe('Hello there, friend.')
    const done = answers(foldChat([...log, ev('finished', { of: 'g1', attempt: 2, reason: 'stop' })]))[0]
    expect(done).toMatchObject({ attempt: 2, text: 'Hello there, friend.', status: 'done' })
  })

  it('cuts at lastSeenIndex whichever attempt wrote it', () => {
    const log = [
      ...conversation(),
      ev('chunk', { of: 'g1', attempt: 2, delta: ', friend' }), // 5
      ev('chunk', { of: 'g1', attempt: 2, delta: '.' }), // 6
    ]
    // The reader saw up to index 3 (attempt 1's "Hello "), pressed Stop while attempt 2 ran.
    const seenInFirst = answers(foldChat([...log, ev('cancelled', { of: 'g1', lastSeenIndex: 3 })]))[0]
    expect([seenInFirst.status, answerText(seenInFirst)]).toEqual(['stopped', 'Hello '])
    // Or up to index 5, the successor's first chunk.
    const seenInSecond = answers(foldChat([...log, ev('cancelled', { of: 'g1', lastSeenIndex: 5 })]))[0]
    expect(answerText(seenInSecond)).toBe('Hello there, friend')
  })

  it('shows a failure the runtime reported, keeping what streamed', () => {
    const log = [
      ...conversation(),
      ev('a2.failed', { of: 'g1', consumer: 'generate', attempts: 3, error: { message: 'upstream 500' } }),
    ]
    expect(answers(foldChat(log))[0]).toMatchObject({ status: 'failed', error: 'upstream 500', text: 'Hello there' })
  })

  it('attaches saved notes to their answer', () => {
    const log = [...conversation(), ev('note.saved', { of: 'g1', note: 'buy milk', key: 'k' })]
    expect(answers(foldChat(log))[0].notes).toEqual(['buy milk'])
  })

  it('is pure: folding never mutates the state it was given', () => {
    const log = conversation()
    const before = foldChat(log)
    const frozen = JSON.stringify(before)
    reduceChat(before, ev('cancelled', { of: 'g1', lastSeenIndex: 2 }))
    reduceChat(before, ev('finished', { of: 'g1', attempt: 1, reason: 'stop' }))
    expect(JSON.stringify(before)).toBe(frozen)
  })
})
