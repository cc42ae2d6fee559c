/** The snapshot's JSON from kept blocks is the JSON of the state, whatever changed since a block was kept. */
import { describe, expect, it } from 'vitest'
import type { ChatEvent } from './contract'
import { foldChat, type ChatState } from './reducer'
import { chatStateJson, snapshotJson } from './snapshot'

let index = 0
const ev = (type: ChatEvent['type'], payload: unknown, id = `e${index}`): ChatEvent =>
  ({ id, sessionId: 's', index: index++, type, payload, createdAt: '2026-12-01T00:00:00.000Z' }) as ChatEvent

/** `answers` answered messages; the answer `streaming` (if any) is left open. */
function conversation(answers: number, streaming?: number): ChatEvent[] {
  index = 0
  const events: ChatEvent[] = []
  for (let a = 0; a < answers; a++) {
    events.push(ev('message', { text: `question ${a} "quoted" \u2028`, ...(a > 0 ? { after: `g${a - 1}` } : {}) }, `m${a}`))
    events.push(ev('generate', { for: `m${a}` }, `g${a}`))
    events.push(ev('chunk', { of: `g${a}`, attempt: 1, delta: `answer ${a}` }))
    if (a !== streaming) events.push(ev('finished', { of: `g${a}`, attempt: 1, reason: 'stop' }))
  }
  return events
}

describe('the snapshot JSON', () => {
  it('is JSON.stringify of the state, also after a fold changed a turn inside a kept block', () => {
    const open = foldChat(conversation(700, 3)) // 1,400 turns; answer 3 (turn 7, block 0) still streaming
    expect(chatStateJson(open)).toBe(JSON.stringify(open))
    const later = foldChat([ev('chunk', { of: 'g3', attempt: 1, delta: ' more' }), ev('message', { text: 'next', after: 'g699' }, 'm-next')], open)
    expect(chatStateJson(later)).toBe(JSON.stringify(later))
    expect(chatStateJson(later)).not.toBe(chatStateJson(open))
    // The older state is served its own turns, not the newer state's kept block.
    expect(chatStateJson(open)).toBe(JSON.stringify(open))
  })

  it('is JSON.stringify of a state read back from a checkpoint (new objects, same content)', () => {
    const state = foldChat(conversation(300))
    const json = chatStateJson(state)
    const parsed = JSON.parse(json) as ChatState
    expect(chatStateJson(parsed)).toBe(json)
    expect(chatStateJson({ turns: [] })).toBe(JSON.stringify({ turns: [] }))
  })

  it('is the route body Response.json gave: session, state, lastSeenIndex', () => {
    const state = foldChat(conversation(2))
    const session = { id: 's', title: 'a "title"', head: 8, createdAt: 'x', updatedAt: 'y' }
    expect(snapshotJson({ session, state, lastSeenIndex: 7 })).toBe(JSON.stringify({ session, state, lastSeenIndex: 7 }))
  })
})
