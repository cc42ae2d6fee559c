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

  it('says the receiver could not say, and names the tool for assistive technology', () => {
    const html = renderToStaticMarkup(<AnswerParts parts={[call({ state: 'unknown', stateAt: 5, settle: 'operator' })]} ended />)
    expect(html).toContain('the receiver could not say whether it arrived')
    expect(html).toContain('aria-label="Tool call: sendWebhook"')
  })

  // A state a user reaches with their own Stop is told in the user's words (issue 36, item 5).
  it.each([
    [{ state: 'running' as const, stateAt: 5 }],
    [{ state: 'unknown' as const, stateAt: 5, settle: 'operator' as const }],
    [{ state: 'unknown' as const, stateAt: 5, settle: 'reconcile' as const }],
    [{ state: 'cancelled' as const, stateAt: 5 }],
    [{ state: 'not-started' as const, stateAt: 5 }],
    [{}],
  ])('%j after a Stop never names workers, operators or /runs', (part) => {
    const html = renderToStaticMarkup(<AnswerParts parts={[call(part)]} ended />)
    expect(html).not.toMatch(/worker|operator|\/runs/i)
  })

  it('arguments cut off by a Stop read as such, not as raw JSON; the text as streamed is kept aside', () => {
    const cut = call({ inputText: '{"m' })
    const html = renderToStaticMarkup(<AnswerParts parts={[cut]} ended />)
    expect(/data-testid="tool-call-input"[^>]*>([^<]*)</.exec(html)?.[1]).toBe('Arguments cut off at the Stop')
    expect(/data-testid="tool-call-input-streamed"[^>]*>([^<]*)</.exec(html)?.[1]).toBe('{&quot;m')
    // While it streams, the arguments so far; once called, the object.
    expect(/data-testid="tool-call-input"[^>]*>([^<]*)</.exec(renderToStaticMarkup(<AnswerParts parts={[cut]} ended={false} />))?.[1]).toBe(
      '{&quot;m',
    )
    const called = renderToStaticMarkup(<AnswerParts parts={[call({ inputText: '', calledAt: 4, input: { message: 'hi' } })]} ended />)
    expect(/data-testid="tool-call-input"[^>]*>([^<]*)</.exec(called)?.[1]).toBe('{&quot;message&quot;:&quot;hi&quot;}')
  })
})
