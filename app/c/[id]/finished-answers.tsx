import { MarkdownBody } from '@/components/markdown-body'
import type { RenderedAnswers } from '@/components/chat/answer-markdown'
import type { FirstScreen } from '@/lib/chat/fold/first-screen'
import { answerText, isTerminal } from '@/lib/chat/fold/reducer'
import { visibleTurns } from '@/lib/chat/fold/versions'

/**
 * The first screen's finished answers, their Markdown rendered here on the server: the page's
 * HTML and its flight data carry the markup, so the browser hydrates plain elements instead of
 * parsing every answer's Markdown at load (~0.3 s of a phone's main thread at 60 turns, figure
 * 13 in bench/README.md) and loads the Markdown module only when an answer streams. Only the
 * versions shown on open: another version is rendered in the browser when it is picked.
 */
export function finishedAnswers(screen: FirstScreen): RenderedAnswers {
  const rendered: Record<string, RenderedAnswers[string]> = {}
  for (const { turn } of visibleTurns(screen.state)) {
    if (turn.kind !== 'assistant' || !isTerminal(turn.status)) continue
    const text = answerText(turn)
    if (text !== '') rendered[turn.id] = { text, body: <MarkdownBody text={text} /> }
  }
  return rendered
}
