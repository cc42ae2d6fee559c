/**
 * The chat page's server renders its first screen's finished answers (finished-answers.tsx), and
 * the browser shows that rendering only while the answer's text is the one rendered
 * (components/chat/answer-markdown.tsx): a Stop the browser applied since, or a streaming
 * answer, is rendered in the browser.
 */
import { describe, expect, it } from 'vitest'
import { renderToStaticMarkup } from 'react-dom/server'
import type { ChatEvent } from '@/lib/chat/contract'
import { foldChat } from '@/lib/chat/fold/reducer'
import { AnswerMarkdown, RenderedAnswersContext, type RenderedAnswers } from '@/components/chat/answer-markdown'
import { Markdown } from '@/components/markdown'
import { MARKDOWN_ANSWER } from '@/scripts/upstream-server'
import { finishedAnswers } from './finished-answers'

let index = 0
const ev = (type: ChatEvent['type'], payload: unknown, id = `e${index}`): ChatEvent =>
  ({ id, sessionId: 's', index: index++, type, payload, createdAt: '2026-01-01T00:00:00.000Z' }) as ChatEvent

/** m1 answered by g1 (done), regenerated as g2 (stopped after its first chunk), m2 answered by g3 (streaming). */
function screen() {
  index = 0
  const events = [
    ev('message', { text: 'hello' }, 'm1'),
    ev('generate', { for: 'm1' }, 'g1'),
    ev('chunk', { of: 'g1', attempt: 1, delta: MARKDOWN_ANSWER }),
    ev('finished', { of: 'g1', attempt: 1, reason: 'stop' }),
    ev('generate', { for: 'm1' }, 'g2'),
    ev('chunk', { of: 'g2', attempt: 1, delta: '**Seen** ' }), // 5
    ev('chunk', { of: 'g2', attempt: 1, delta: 'unseen' }),
    ev('cancelled', { of: 'g2', lastSeenIndex: 5 }),
    ev('finished', { of: 'g2', attempt: 1, reason: 'cancelled' }),
    ev('message', { text: 'and?', after: 'g2' }, 'm2'),
    ev('generate', { for: 'm2' }, 'g3'),
    ev('chunk', { of: 'g3', attempt: 1, delta: 'still *writing*' }),
  ]
  return { state: foldChat(events), lastSeenIndex: index - 1, older: null, continues: [] }
}

const html = (node: React.ReactNode) => renderToStaticMarkup(<>{node}</>)

describe('finished answers rendered on the server', () => {
  it('renders the shown versions’ finished answers, each as the browser’s Markdown renders its text; none for a streaming answer or a version not shown', () => {
    const rendered = finishedAnswers(screen())
    expect(Object.keys(rendered)).toEqual(['g2']) // g1 is the older version, g3 streams
    expect(rendered.g2.text).toBe('**Seen** ')
    expect(html(rendered.g2.body)).toBe(html(<Markdown text="**Seen** " />))
    expect(html(rendered.g2.body)).toContain('<strong>Seen</strong>')
  })

  it('a table, a list and a fenced code block with its Copy button come out as the browser renders them', () => {
    const body = finishedAnswers({ state: foldChat(eventsOfOne()), lastSeenIndex: 3, older: null, continues: [] })
    const [only] = Object.values(body)
    expect(html(only.body)).toBe(html(<Markdown text={MARKDOWN_ANSWER} />))
    expect(html(only.body)).toMatch(/<li>[\s\S]*<table>[\s\S]*aria-label="Copy code"/)
  })
})

function eventsOfOne(): ChatEvent[] {
  index = 0
  return [
    ev('message', { text: 'hello' }, 'm1'),
    ev('generate', { for: 'm1' }, 'g1'),
    ev('chunk', { of: 'g1', attempt: 1, delta: MARKDOWN_ANSWER }),
    ev('finished', { of: 'g1', attempt: 1, reason: 'stop' }),
  ]
}

describe('an answer shows the server’s rendering only of the text it rendered', () => {
  const rendered: RenderedAnswers = { g1: { text: 'the text', body: <p data-rendered="server">the text</p> } }
  const shown = (text: string, streaming = false) =>
    html(
      <RenderedAnswersContext value={rendered}>
        <AnswerMarkdown id="g1" text={text} streaming={streaming} />
      </RenderedAnswersContext>,
    )

  it('the same text, finished: the server’s markup', () => {
    expect(shown('the text')).toBe('<p data-rendered="server">the text</p>')
  })

  it('another text (a Stop this browser applied since, the rest shown) or a streaming answer: rendered here', () => {
    for (const [text, streaming] of [
      ['the te', false],
      ['the text and the rest', false],
      ['the text', true],
    ] as const) {
      expect(shown(text, streaming)).not.toContain('data-rendered')
      expect(shown(text, streaming)).toContain(text)
    }
  })
})
