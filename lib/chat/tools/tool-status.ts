/**
 * The words a tool call's state is told in, on the page (components/chat/answer-parts.tsx) and
 * in an export (export.ts): one place, so a file says what the screen said.
 */
import { toolPhase, type ToolPart } from '../fold/parts'

export interface ToolCallStatus {
  label: string
  detail?: string
  tone: 'busy' | 'done' | 'stopped' | 'failed' | 'unknown'
}

/**
 * What a tool call shows, from its effect's record: not started, running, done with its result,
 * failed, stopped before it happened, or may have happened (with how it will be settled).
 */
export function describeToolCall(part: ToolPart, ended: boolean): ToolCallStatus {
  const phase = toolPhase(part)
  switch (phase) {
    case 'input':
    case 'called':
      // The model's side only: once the answer ended without a state, the tool never ran.
      return ended ? { label: 'Not started', detail: 'Stopped before the tool ran.', tone: 'stopped' } : { label: 'Preparing…', tone: 'busy' }
    case 'not-started':
      return { label: 'Not started', detail: 'Stopped before the tool ran.', tone: 'stopped' }
    case 'running':
      // Still running when its answer ended: its attempt died mid-call. Its settled state follows once
      // the receiver is asked (the next attempt, settle-in-flight.ts, or the drain's ending hook, ending.ts).
      return ended
        ? { label: 'May have happened', detail: 'Its worker stopped mid-call; the receiver is asked (see /runs).', tone: 'unknown' }
        : { label: 'Running…', tone: 'busy' }
    case 'done':
      return { label: 'Done', tone: 'done' }
    case 'failed':
      return { label: 'Failed', detail: part.error, tone: 'failed' }
    case 'cancelled':
      return { label: 'Stopped — did not happen', detail: 'Stopped mid-call; the receiver has no record of it.', tone: 'stopped' }
    case 'unknown':
      return {
        label: 'May have happened',
        detail:
          part.settle === 'reconcile'
            ? 'Stopped mid-call; it will be settled by asking the receiver.'
            : 'Stopped mid-call and the receiver could not say; an operator settles it on /runs.',
        tone: 'unknown',
      }
  }
}
