/**
 * A message's files in the fold: carried by reference on its turn; an edit that names none keeps
 * those of the message it edits (`files: []` drops them); a regenerate answers the same message,
 * so its files; the fast fold and the reference fold agree; the export lists them.
 */
import { describe, expect, it } from 'vitest'
import type { ChatEvent, FileRef } from '../contract'
import { foldChat, type UserTurn } from './reducer'
import { referenceReduce } from './reducer.reference'
import { initialChatState } from './turns'
import { exportChat, exportMarkdown } from '../server/export'

let index = 0
const ev = (type: ChatEvent['type'], payload: unknown, id = `e${index}`): ChatEvent =>
  ({ id, sessionId: 's', index: index++, type, payload, createdAt: '2026-01-01T00:00:00.000Z' }) as ChatEvent
const file = (n: number): FileRef => ({
  id: `00000000-0000-4000-8000-00000000000${n}`,
  name: `photo-${n}.png`,
  mediaType: 'image/png',
  size: 100 * n,
  sha256: String(n).repeat(64),
})

function chat(): ChatEvent[] {
  index = 0
  return [
    ev('message', { text: 'what is this?', files: [file(1), file(2)] }, 'm1'),
    ev('generate', { for: 'm1' }, 'g1'),
    ev('finished', { of: 'g1', attempt: 1, reason: 'stop' }),
    ev('generate', { for: 'm1', replaces: 'g1' }, 'g2'),
    ev('message', { text: 'and now?', edits: 'm1' }, 'm2'),
    ev('message', { text: 'without them', edits: 'm1', files: [] }, 'm3'),
    ev('message', { text: 'another', edits: 'm1', files: [file(3)] }, 'm4'),
  ]
}

const users = (turns: ReturnType<typeof foldChat>['turns']) =>
  Object.fromEntries(turns.filter((t): t is UserTurn => t.kind === 'user').map((t) => [t.id, t.files?.map((f) => f.id) ?? []]))

describe('files in the fold', () => {
  it('a message carries its files; an edit naming none keeps the edited message’s; `files: []` drops them', () => {
    const state = foldChat(chat())
    expect(users(state.turns)).toEqual({ m1: [file(1).id, file(2).id], m2: [file(1).id, file(2).id], m3: [], m4: [file(3).id] })
    const regenerate = state.turns.find((t) => t.id === 'g2')
    expect(regenerate).toMatchObject({ kind: 'assistant', for: 'm1' })
  })

  it('the fast fold and the reference fold agree, event by event and all at once', () => {
    const events = chat()
    let reference = initialChatState
    let fast = initialChatState
    for (const event of events) {
      reference = referenceReduce(reference, event)
      fast = foldChat([event], fast)
      expect(users(fast.turns)).toEqual(users(reference.turns))
    }
    expect(users(foldChat(events).turns)).toEqual(users(reference.turns))
  })

  it('the export lists each message’s files, in JSON and in Markdown', () => {
    const exported = exportChat({ id: 's', title: 'Files' }, foldChat(chat().slice(0, 3)))
    expect(exported.turns[0].versions[0].files).toEqual([file(1), file(2)])
    const markdown = exportMarkdown(exported)
    expect(markdown).toContain('Attached: `photo-1.png` (image/png, 100 bytes')
    expect(markdown).toContain('Attached: `photo-2.png`')
  })
})
