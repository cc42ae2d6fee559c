/**
 * The rules of a call that waits for the user's yes (answer/approvals.ts), pure, on the fold's
 * state: what a decision must match to be admitted, and what ends a wait.
 *
 * What ends it is the first, in log order, of: a Stop of the answer, or the decision that leaves
 * no waiting call of the answer undecided. Every run that could end it (the decision's, the
 * Stop's) applies this one rule to the log before its trigger, so exactly one of them does:
 * a Stop first ends the answer with its calls "Not started"; a decision first continues the
 * answer as a run of its own, and a Stop after it stops that run (its dispatch is the runtime's
 * compare-and-set on that run's cancel_version).
 */
import type { ChatEvent } from '../contract'
import { isTerminal, type AnswerTurn, type ToolPart } from '../fold/reducer'
import type { ToolDecision } from '../fold/parts'
import { answerCancelVersion, waitingCalls } from '../fold/waits'

export { answerOf, answerCancelVersion, waitingCalls } from '../fold/waits'

type Decision = Extract<ChatEvent, { type: 'tool.decision' }>['payload']

/** Why a decision may not be written, in words for the 4xx; undefined when it may. */
export function refusalOfDecision(
  answer: AnswerTurn | undefined,
  decision: Decision,
  { argsHash, now, byServer = false }: { argsHash: (input: unknown) => string; now: number; byServer?: boolean },
): { code: 'invalid_reference' | 'conflict' | 'invalid_payload'; message: string } | undefined {
  if (decision.decision === 'expired' && !byServer) return { code: 'invalid_payload', message: 'only the server lets a call expire' }
  if (!answer) return { code: 'invalid_reference', message: 'tool.decision.of must name an answer in this chat' }
  const part = answer.parts.find((p): p is ToolPart => p.kind === 'tool' && p.call === decision.call)
  if (!part) return { code: 'invalid_reference', message: 'tool.decision.call must name a call of that answer' }
  if (decision.cancelVersion !== answerCancelVersion(answer) || isTerminal(answer.status))
    return { code: 'conflict', message: 'the answer was stopped: the call no longer waits' }
  if (part.state !== 'awaiting-approval' || part.decided)
    return { code: 'conflict', message: 'that call does not wait for a decision (decided already)' }
  if (!byServer && part.approval && part.approval.expiresAt <= now) return { code: 'conflict', message: 'that call waited too long: it expired' }
  if (decision.args !== argsHash(part.input)) return { code: 'conflict', message: 'the decision is for other arguments than the call’s' }
  return undefined
}

/** What the run of `trigger` does with the answer's wait, given the log before the trigger (folded). */
export type WaitEnding =
  { ends: false } | { ends: 'stop'; calls: ToolPart[] } | { ends: 'decisions'; calls: Array<{ part: ToolPart; decision: ToolDecision }> }

export function waitEnding(answer: AnswerTurn | undefined, trigger: Pick<ChatEvent, 'type' | 'payload'>): WaitEnding {
  // Ended or stopped before the trigger: whatever ended it wrote its ending.
  if (!answer || isTerminal(answer.status) || answer.lastSeenIndex !== undefined) return { ends: false }
  const waiting = waitingCalls(answer)
  if (waiting.length === 0) return { ends: false }
  const undecided = waiting.filter((p) => !p.decided)
  // Every call was decided before: the continuation runs, and this Stop stops it (its abortOn).
  if (trigger.type === 'cancelled') return undecided.length === 0 ? { ends: false } : { ends: 'stop', calls: waiting }
  if (trigger.type !== 'tool.decision') return { ends: false }
  const decision = trigger.payload as Decision
  // A decision on a call decided before (a replay, a race with expiry) or not waiting: the first one counts.
  if (!undecided.some((p) => p.call === decision.call)) return { ends: false }
  // Others still wait: the last decision continues.
  if (undecided.length > 1) return { ends: false }
  return { ends: 'decisions', calls: waiting.map((part) => ({ part, decision: part.decided ?? decision.decision })) }
}
