/** The words a call that waits for approval is shown and told in (tool-call.ts): plain, and never a success it did not have. */
import { describe, expect, it } from 'vitest'
import type { ToolPart } from '../fold/parts'
import { describeToolCall, toolResultForModel } from './tool-call'

const waiting = (more: Partial<ToolPart> = {}): ToolPart => ({
  kind: 'tool',
  index: 3,
  call: 'call_1',
  tool: 'team__deliver',
  inputChunks: [],
  inputText: '',
  input: { message: 'hi' },
  calledAt: 3,
  state: 'awaiting-approval',
  stateAt: 4,
  approval: { server: 'team', args: 'a'.repeat(64), expiresAt: 1, answerIndex: 1 },
  ...more,
})

describe('a call that waits for approval, in words', () => {
  it.each([
    [waiting(), false, 'Waiting for your approval'],
    [waiting({ decided: 'approve' }), false, 'Approved'],
    [waiting({ decided: 'deny' }), false, 'Denied'],
    [waiting({ decided: 'expired' }), false, 'Expired'],
    // The answer ended while it waited (a Stop whose ending is not folded yet): it never ran.
    [waiting(), true, 'Not started'],
    [waiting({ state: 'denied' }), true, 'Denied'],
    [waiting({ state: 'expired' }), true, 'Expired'],
    [waiting({ state: 'not-started' }), true, 'Not started'],
  ] as const)('%#: %s', (part, ended, label) => {
    expect(describeToolCall(part, ended).label).toBe(label)
  })

  it('tells the model a denied, expired or never-decided call did not happen', () => {
    expect(toolResultForModel(waiting({ state: 'denied' }))).toMatchObject({ type: 'text', value: expect.stringContaining('denied') })
    expect(toolResultForModel(waiting({ state: 'expired' }))).toMatchObject({ type: 'text', value: expect.stringContaining('not made') })
    expect(toolResultForModel(waiting())).toMatchObject({ type: 'text', value: expect.stringContaining('did not happen') })
  })
})
