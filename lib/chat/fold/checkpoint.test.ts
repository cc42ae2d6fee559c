/**
 * The chat's checkpoint codec (lib/a2 writes and reads its pieces a slice at a time): a
 * block of 256 turns a piece, and a checkpoint after a short tail serializes only the blocks
 * that changed — whole, one JSON.stringify of the state held the loop ~18 ms at 100k events.
 * Correctness at any cut is reducer.property.test.ts's.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { ChatEvent } from '../contract'
import { chatCheckpoint } from './checkpoint'
import { foldChat, type ChatState } from './reducer'

let index = 0
const ev = (type: ChatEvent['type'], payload: unknown, id = `e${index}`): ChatEvent =>
  ({ id, sessionId: 's', index: index++, type, payload, createdAt: '2026-12-01T00:00:00.000Z' }) as ChatEvent

function conversation(answers: number): ChatEvent[] {
  index = 0
  return Array.from({ length: answers }, (_, a) => [
    ev('message', { text: `question ${a}`, ...(a > 0 ? { after: `g${a - 1}` } : {}) }, `m${a}`),
    ev('generate', { for: `m${a}` }, `g${a}`),
    ev('chunk', { of: `g${a}`, attempt: 1, delta: `answer ${a}` }),
    ev('finished', { of: `g${a}`, attempt: 1, reason: 'stop' }),
  ]).flat()
}

function read(pieces: string[]): ChatState {
  const decoder = chatCheckpoint.decoder()
  for (const piece of pieces) decoder.add(piece)
  return decoder.end()
}

/** Arrays JSON.stringify was asked to serialize while `fn` ran (a block each; the snapshot's header is an object). */
function blocksSerialized(fn: () => void): number {
  const stringify = vi.spyOn(JSON, 'stringify')
  try {
    fn()
    return stringify.mock.calls.filter(([value]) => Array.isArray(value)).length
  } finally {
    stringify.mockRestore()
  }
}

afterEach(() => vi.restoreAllMocks())

describe("the chat's checkpoint codec", () => {
  it('writes a block of 256 turns a piece, and after a short tail serializes only the blocks that changed', () => {
    const state = foldChat(conversation(700)) // 1,400 turns: 5 full blocks and one of 120
    let pieces: string[] = []
    expect(blocksSerialized(() => (pieces = [...chatCheckpoint.encode(state)].slice(1)))).toBe(6) // piece 0 is the head
    expect(pieces.map((piece) => (JSON.parse(piece) as unknown[]).length)).toEqual([256, 256, 256, 256, 256, 120])
    expect(pieces.flatMap((piece) => JSON.parse(piece) as unknown[])).toEqual(JSON.parse(JSON.stringify(state.turns)))

    const later = foldChat([ev('message', { text: 'next', after: 'g699' }, 'm-next'), ev('generate', { for: 'm-next' }, 'g-next')], state)
    let laterPieces: string[] = []
    expect(blocksSerialized(() => (laterPieces = [...chatCheckpoint.encode(later)].slice(1)))).toBe(1) // the last, partial block
    expect(laterPieces.join()).toBe([...pieces.slice(0, 5), JSON.stringify(later.turns.slice(1_280))].join())
  })

  it('reads a block a piece, and keeps what it read: the next checkpoint serializes no full block again', () => {
    const pieces = [...chatCheckpoint.encode(foldChat(conversation(700)))]
    const state = read(pieces)
    expect(JSON.stringify(state.turns)).toBe(
      `[${pieces
        .slice(1)
        .map((piece) => piece.slice(1, -1))
        .join(',')}]`,
    )
    expect(blocksSerialized(() => [...chatCheckpoint.encode(state)])).toBe(1)
    // And the fold from it: its index came with the pieces, so a new turn lands on the right branch.
    const next = foldChat([ev('message', { text: 'next' }, 'm-next')], state)
    expect(next.turns.at(-1)).toMatchObject({ id: 'm-next', parent: 'g699' })
  })

  it('reads an empty state from its head alone', () => {
    const pieces = [...chatCheckpoint.encode({ turns: [] })]
    expect(pieces).toHaveLength(1)
    expect(read(pieces)).toEqual({ turns: [] })
  })
})
