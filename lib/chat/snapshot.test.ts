/** The snapshot's body from kept blocks is the JSON of the snapshot, whatever changed since a block was kept. */
import { describe, expect, it } from 'vitest'
import type { ChatEvent } from './contract'
import { foldChat, type ChatState } from './reducer'
import { chunksStream, snapshotChunks } from './snapshot'

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

const session = { id: 's', title: 'a "title" ü', head: 8, createdAt: 'x', updatedAt: 'y' }
const body = (state: ChatState, lastSeenIndex = 7) => Buffer.concat([...snapshotChunks({ session, state, lastSeenIndex })]).toString('utf8')
const expected = (state: ChatState, lastSeenIndex = 7) => JSON.stringify({ session, state, lastSeenIndex })

describe('the snapshot body', () => {
  it('is JSON.stringify of the state, also after a fold changed a turn inside a kept block', () => {
    const open = foldChat(conversation(700, 3)) // 1,400 turns; answer 3 (turn 7, block 0) still streaming
    expect(body(open)).toBe(expected(open))
    const later = foldChat([ev('chunk', { of: 'g3', attempt: 1, delta: ' more' }), ev('message', { text: 'next', after: 'g699' }, 'm-next')], open)
    expect(body(later)).toBe(expected(later))
    expect(body(later)).not.toBe(body(open))
    // The older state is served its own turns, not the newer state's kept block.
    expect(body(open)).toBe(expected(open))
  })

  it('is JSON.stringify of a state read back from a checkpoint (new objects, same content)', () => {
    const state = foldChat(conversation(300))
    const json = body(state)
    const parsed = (JSON.parse(json) as { state: ChatState }).state
    expect(body(parsed)).toBe(json)
    expect(body({ turns: [] }, -1)).toBe(expected({ turns: [] }, -1))
  })

  it('streams the same body every time: a kept block survives being sent', async () => {
    const state = foldChat(conversation(400))
    const first = await new Response(chunksStream(snapshotChunks({ session, state, lastSeenIndex: 1_599 }))).text()
    const second = await new Response(chunksStream(snapshotChunks({ session, state, lastSeenIndex: 1_599 }))).text()
    expect(first).toBe(expected(state, 1_599))
    expect(second).toBe(first)
  })
})
