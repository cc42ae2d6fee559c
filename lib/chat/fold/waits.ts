/**
 * An answer's calls that wait for the user's yes, as the fold holds them: what the page offers to
 * decide (browser/use-chat.ts) and what the rules of a wait read (tools/approval-rule.ts).
 */
import type { AnswerTurn, ChatState, ToolPart } from './reducer'

/** The answer `of`, if the state holds it. */
export function answerOf(state: ChatState, of: string): AnswerTurn | undefined {
  const turn = state.turns.find((t) => t.kind === 'assistant' && t.id === of)
  return turn?.kind === 'assistant' ? turn : undefined
}

/** The calls of an answer that wait (decided or not): those a wait's ending settles. */
export function waitingCalls(answer: AnswerTurn): ToolPart[] {
  return answer.parts.filter((p): p is ToolPart => p.kind === 'tool' && p.state === 'awaiting-approval')
}

/** An answer's Stops as a version: 0 while it runs or waits; a Stop ends a wait, so any other is stale. */
export const answerCancelVersion = (answer: AnswerTurn): number => (answer.lastSeenIndex !== undefined || answer.status === 'stopped' ? 1 : 0)
