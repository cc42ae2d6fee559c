/** What each tool call state reads as: never "Failed" for a call a Stop or a crash may have let reach its receiver. */
import { describe, expect, it } from 'vitest'
import { renderToStaticMarkup } from 'react-dom/server'
import type { ToolPart } from '@/lib/chat/fold/reducer'
import { AnswerParts } from './answer-parts'

const call = (part: Partial<ToolPart>): ToolPart => ({
  kind: 'tool',
  index: 3,
  call: 'call_a',
  tool: 'sendWebhook',
  inputChunks: [],
  inputText: '{"message":"hi"}',
  ...part,
})

/** The label a tool call shows, rendered as the page renders it. */
function label(part: ToolPart, ended: boolean): string {
  const html = renderToStaticMarkup(<AnswerParts parts={[part]} ended={ended} />)
  return /data-testid="tool-call-state"[^>]*>([^<]*)</.exec(html)?.[1] ?? ''
}

describe('a tool call on screen', () => {
  it.each([
    [{}, false, 'Preparing…'],
    [{}, true, 'Not started'],
    [{ calledAt: 4, input: { message: 'hi' } }, true, 'Not started'],
    [{ state: 'not-started' as const, stateAt: 5 }, true, 'Not started'],
    [{ state: 'running' as const, stateAt: 5 }, false, 'Running…'],
    [{ state: 'running' as const, stateAt: 5 }, true, 'May have happened'],
    [{ state: 'done' as const, stateAt: 5, result: { ok: true } }, true, 'Done'],
    [{ state: 'failed' as const, stateAt: 5, error: 'the webhook answered 500' }, true, 'Failed'],
    [{ state: 'cancelled' as const, stateAt: 5 }, true, 'Stopped — did not happen'],
    [{ state: 'unknown' as const, stateAt: 5, settle: 'operator' as const }, true, 'May have happened'],
  ])('%j, answer ended: %s → %s', (part, ended, expected) => {
    expect(label(call(part), ended)).toBe(expected)
  })

  it('says how an unknown call is settled, and names the tool for assistive technology', () => {
    const html = renderToStaticMarkup(<AnswerParts parts={[call({ state: 'unknown', stateAt: 5, settle: 'operator' })]} ended />)
    expect(html).toContain('an operator settles it on /runs')
    expect(html).toContain('aria-label="Tool call: sendWebhook"')
  })
})
