import { describe, expect, it } from 'vitest'
import type { ChatEvent } from '../contract'
import { activeAnswer, answerRest, answerText, foldChat, reduceChat, type AnswerTurn, type ChatState } from './reducer'
import { visibleTurns } from './versions'
import { toModelMessages } from '../answer/history'

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
  it('a Continue starts with the cut of the answer it continues; a Stop on it cuts only its own text, the optimistic fold and the refold alike', () => {
    const stopped = [
      ...conversation(),
      ev('cancelled', { of: 'g1', lastSeenIndex: 3 }), // 5: the reader saw "Hello "
      ev('finished', { of: 'g1', attempt: 1, reason: 'cancelled' }), // 6
    ]
    const asked = ev('generate', { for: 'm1', continues: 'g1', model: 'offline-brief' }, 'g2') // 7
    const continued = [
      ...stopped,
      asked,
      ev('chunk', { of: 'g2', attempt: 1, delta: 'there, ' }), // 8
      ev('chunk', { of: 'g2', attempt: 1, delta: 'friend' }), // 9
    ]
    const streaming = answers(foldChat(continued))[1]
    expect(streaming).toMatchObject({ id: 'g2', continues: 'g1', prefix: 'Hello ', model: 'offline-brief', status: 'streaming' })
    expect(answerText(streaming)).toBe('Hello there, friend')
    // A Stop whose reader saw up to the continuation's first chunk; one before its generate (pressed before the push echoed) keeps the prefix all the same.
    for (const [lastSeenIndex, shown] of [
      [8, 'Hello there, '],
      [-1, 'Hello '],
    ] as const) {
      const cut = [...continued, ev('cancelled', { of: 'g2', lastSeenIndex }), ev('finished', { of: 'g2', attempt: 1, reason: 'cancelled' })]
      const refold = answers(foldChat(cut))[1]
      expect(refold.status).toBe('stopped')
      expect(answerText(refold)).toBe(shown)
      // The browser's optimistic fold: its generate had index -1 when it was folded.
      const optimistic = answers(foldChat([...stopped, { ...asked, index: -1 }, ...cut.slice(stopped.length + 1)]))[1]
      expect(answerText(optimistic)).toBe(shown)
      // Both versions stay: the stopped one with its own cut.
      expect(answerText(answers(foldChat(cut))[0])).toBe('Hello ')
      expect(visibleTurns(foldChat(cut))[1].versions).toEqual(['g1', 'g2'])
    }
    // As history, the continuation is the whole answer the reader saw.
    const later = [...continued, ev('finished', { of: 'g2', attempt: 1, reason: 'stop' }), ev('message', { text: 'and?', after: 'g2' }, 'm2')]
    expect(toModelMessages(foldChat(later), 'm2', { budgetTokens: 10_000 }).map((m) => m.content)).toEqual(['hello', 'Hello there, friend', 'and?'])
  })

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
    expect(answer.lastSeenIndex).toBe(3)
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
      // A late cancel from a reader who had seen every chunk of an answer that already ended changes nothing.
      ev('cancelled', { of: 'g2', lastSeenIndex: 10 }),
    ]
    const [first, second] = answers(foldChat(log))
    expect([first.status, answerText(first)]).toEqual(['stopped', 'Hel'])
    expect([second.status, answerText(second)]).toEqual(['done', 'Second answer'])
  })

  it('an answer that waited for approval shows both calls’ tokens; a version continuing it that shows the call takes none of them', () => {
    const waited = [
      ...conversation(),
      ev('tool.call', { of: 'g1', attempt: 1, call: 'c1', tool: 'test__deliver', input: { m: 1 } }), // 5
      ev('cancelled', { of: 'g1', lastSeenIndex: 5 }), // 6
      ev('finished', { of: 'g1', attempt: 1, reason: 'cancelled', usage: { inputTokens: 7, outputTokens: 3 } }), // 7
      ev('generate', { for: 'm1', continues: 'g1' }, 'g2'), // 8
      // The wait's cost, folded late (after a version continuing the answer shows its call).
      ev('tool.state', {
        of: 'g1',
        call: 'c1',
        tool: 'test__deliver',
        state: 'awaiting-approval',
        usage: { inputTokens: 20, outputTokens: 4, counted: true },
      }),
    ]
    for (const state of [foldChat(waited), waited.reduce(reduceChat, foldChat([]))]) {
      const [first, second] = answers(state)
      expect(first.usage).toEqual({ inputTokens: 27, outputTokens: 7, counted: true })
      expect(second.parts.some((p) => p.kind === 'tool' && p.call === 'c1')).toBe(true)
      expect(second.usage).toBeUndefined()
    }
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
    const log = [...conversation(), ev('a2.failed', { of: 'g1', consumer: 'generate', attempts: 3, error: { message: 'upstream 500' } })]
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

describe('a Stop that lands after its answer finished (the browser was cut off while the rest was written)', () => {
  /** The reader saw "Hello " (up to index 3) and pressed Stop; the answer finished before the Stop reached the log. */
  function finishedThenStopped(lastSeenIndex = 3) {
    const log = [...conversation(), ev('finished', { of: 'g1', attempt: 1, reason: 'stop' })]
    const stop = ev('cancelled', { of: 'g1', lastSeenIndex }, 'c1')
    return { log, stop }
  }

  it('cuts the finished answer at what the reader saw, and keeps the rest aside, offered, not shown', () => {
    const { log, stop } = finishedThenStopped()
    const answer = answers(foldChat([...log, stop]))[0]
    expect(answer).toMatchObject({ status: 'stopped', lastSeenIndex: 3, finishReason: 'stop', finishedBeforeStop: true })
    expect(answerText(answer)).toBe('Hello ')
    expect(answerRest(answer)).toBe('there')
    // The model is sent what the reader saw, like any stopped answer.
    expect(toModelMessages(foldChat([...log, stop, ev('message', { text: 'go on', after: 'g1' }, 'm2')]), 'm2').map((m) => m.content)).toEqual([
      'hello',
      'Hello ',
      'go on',
    ])
  })

  it('the optimistic fold (the Stop on top of the confirmed log) equals the authoritative refold, also from a checkpoint', () => {
    const { log, stop } = finishedThenStopped()
    const optimistic = reduceChat(foldChat(log), { ...stop, index: -1 } as ChatEvent)
    const authoritative = foldChat([...log, stop])
    const fromCheckpoint = foldChat([stop], JSON.parse(JSON.stringify(foldChat(log))) as ChatState)
    const json = (s: ChatState) => JSON.parse(JSON.stringify(s)) as unknown
    expect(json(optimistic)).toEqual(json(authoritative))
    expect(json(fromCheckpoint)).toEqual(json(authoritative))
    // Cut while it streamed, or after it finished: the same text.
    const cutWhileStreaming = foldChat([...conversation(), stop, ev('finished', { of: 'g1', attempt: 1, reason: 'cancelled' })])
    expect(answerText(answers(cutWhileStreaming)[0])).toBe(answerText(answers(authoritative)[0]))
  })

  it('a Stop from a reader who had seen every chunk changes nothing', () => {
    const { log, stop } = finishedThenStopped(4)
    const state = foldChat(log)
    expect(reduceChat(state, stop)).toBe(state)
  })

  it('cuts a failed answer the same way', () => {
    const log = [...conversation(), ev('a2.failed', { of: 'g1', consumer: 'generate', attempts: 3, error: { message: 'upstream 500' } })]
    const answer = answers(foldChat([...log, ev('cancelled', { of: 'g1', lastSeenIndex: 2 })]))[0]
    expect([answer.status, answerText(answer), answerRest(answer), answer.finishedBeforeStop]).toEqual(['stopped', 'Hel', 'lo there', true])
  })

  it('keeps the chunk boundaries of the newest answer only: once the conversation moves on they go, and a later Stop changes nothing', () => {
    const { log, stop } = finishedThenStopped()
    const movedOn = foldChat([...log, ev('message', { text: 'next', after: 'g1' }, 'm2')])
    // The newest answer keeps them (what a cut needs); what a checkpoint stores of an older one is its text, no per-chunk numbers.
    expect(answers(foldChat(log))[0].chunkEnds).toEqual([
      [2, 3],
      [3, 6],
      [4, 11],
    ])
    expect(answers(movedOn)[0]).toMatchObject({ status: 'done', text: 'Hello there', chunks: [] })
    expect(Object.keys(answers(movedOn)[0])).not.toContain('chunkEnds')
    expect(reduceChat(movedOn, stop)).toBe(movedOn)
  })
})

describe('versions: regenerate and edit keep every version', () => {
  const ids = (state: ChatState, selection = {}) => visibleTurns(state, selection).map((v) => v.turn.id)
  const versionOf = (state: ChatState, id: string, selection = {}) => {
    const v = visibleTurns(state, selection).find((t) => t.turn.id === id)!
    return `${v.version + 1}/${v.versions.length}`
  }

  function regenerated() {
    index = 0
    return [
      ev('message', { text: 'hello' }, 'm1'), // 0
      ev('generate', { for: 'm1' }, 'g1'), // 1
      ev('chunk', { of: 'g1', attempt: 1, delta: 'First ' }), // 2
      ev('chunk', { of: 'g1', attempt: 1, delta: 'answer' }), // 3
      ev('cancelled', { of: 'g1', lastSeenIndex: 2 }), // 4: g1 cut at "First "
      ev('finished', { of: 'g1', attempt: 1, reason: 'cancelled' }), // 5
      ev('generate', { for: 'm1', replaces: 'g1' }, 'g2'), // 6
      ev('chunk', { of: 'g2', attempt: 1, delta: 'Second ' }), // 7
      ev('chunk', { of: 'g2', attempt: 1, delta: 'one' }), // 8
      ev('cancelled', { of: 'g2', lastSeenIndex: 8 }), // 9: g2 cut at "Second one"
      ev('finished', { of: 'g2', attempt: 1, reason: 'cancelled' }), // 10
    ]
  }

  it('a regenerate is a new version of the answer: the latest shows, the older one is kept with its own cut', () => {
    const state = foldChat(regenerated())
    expect(ids(state)).toEqual(['m1', 'g2'])
    expect(versionOf(state, 'g2')).toBe('2/2')
    const [first, second] = answers(state)
    expect([first.id, first.status, answerText(first)]).toEqual(['g1', 'stopped', 'First '])
    expect([second.id, second.status, answerText(second)]).toEqual(['g2', 'stopped', 'Second one'])
    const browsing = { 'a:m1': { id: 'g1', of: 2 } }
    expect(ids(state, browsing)).toEqual(['m1', 'g1'])
    expect(versionOf(state, 'g1', browsing)).toBe('1/2')
  })

  it('a newer version than the one chosen shows by itself (a regenerate while browsing an older one)', () => {
    const log = [...regenerated(), ev('generate', { for: 'm1', replaces: 'g2' }, 'g3')]
    expect(ids(foldChat(log), { 'a:m1': { id: 'g1', of: 2 } })).toEqual(['m1', 'g3'])
  })

  it('an edit is a new version of the message: the old branch (its answers and what followed) is kept', () => {
    index = 0
    const log = [
      ev('message', { text: 'hello' }, 'm1'),
      ev('generate', { for: 'm1' }, 'g1'),
      ev('finished', { of: 'g1', attempt: 1, reason: 'stop' }),
      ev('message', { text: 'more', after: 'g1' }, 'm2'),
      ev('generate', { for: 'm2' }, 'g2'),
      ev('finished', { of: 'g2', attempt: 1, reason: 'stop' }),
      ev('message', { text: 'hello, edited', edits: 'm1' }, 'm3'),
      ev('generate', { for: 'm3' }, 'g3'),
    ]
    const state = foldChat(log)
    expect(ids(state)).toEqual(['m3', 'g3'])
    expect(versionOf(state, 'm3')).toBe('2/2')
    expect(ids(state, { 'u:': { id: 'm1', of: 2 } })).toEqual(['m1', 'g1', 'm2', 'g2'])
    // The model is sent the branch it answers, nothing from the other one.
    expect(toModelMessages(foldChat(log), 'm3')).toEqual([{ role: 'user', content: 'hello, edited' }])
    expect(toModelMessages(foldChat(log), 'm2').map((m) => m.content)).toEqual(['hello', 'more'])
  })

  it('a message follows the answer it was sent after, even an older version', () => {
    const log = [...regenerated(), ev('message', { text: 'about the first', after: 'g1' }, 'm2'), ev('generate', { for: 'm2' }, 'g3')]
    const state = foldChat(log)
    // The latest version of m1's answer is g2, which has no follow-up; g1's branch has m2.
    expect(ids(state)).toEqual(['m1', 'g2'])
    expect(ids(state, { 'a:m1': { id: 'g1', of: 2 } })).toEqual(['m1', 'g1', 'm2', 'g3'])
    expect(toModelMessages(foldChat(log), 'm2').map((m) => m.content)).toEqual(['hello', 'First ', 'about the first'])
  })

  it('a regenerate sends the model the conversation up to its message, not the version it replaces', () => {
    expect(toModelMessages(foldChat(regenerated()), 'm1')).toEqual([{ role: 'user', content: 'hello' }])
  })
})
