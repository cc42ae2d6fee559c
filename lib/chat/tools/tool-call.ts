/**
 * A tool call's life, in one place: its key, the states it can be in and how each is reached, and
 * the words each state is told in. Every module that writes or shows a call's state asks this one;
 * none decides on its own. Pure and free of server code, so the page and an export use it too.
 *
 * The key. A call's effect is recorded under `tool:<tool>:<call>` (the tool's name and the model's
 * call id, stable across a retry of the same call): built by `toolCallKey`, read back by
 * `parseToolCallKey`, nowhere else.
 *
 * The states (contract.ts, TOOL_CALL_STATES), and the four ways one is reached:
 * - the live call (run-tool-call.ts, `stateOfLiveCall`): not dispatched (a Stop first) →
 *   not-started; returned → done; cut off by a Stop or a lost claim → what its receiver says when
 *   asked (done, cancelled: it has no record) or unknown (it cannot say: an operator settles it),
 *   a read → cancelled; an effect nobody could settle → unknown; any other throw → failed;
 * - a stored effect (stored-effect.ts, `stateOfStoredEffect`): what a run settled without its
 *   handler (the drain, the last attempt's crash) writes for the calls its answer shows running;
 * - a successor's settling (settle-in-flight.ts, `stateOfSettledCall`): the calls a dead attempt
 *   left running, asked of their receivers through the effect's reconcile;
 * - an operator's verdict (operator-verdict.ts, `stateOfVerdict`) on a call left unknown.
 *
 * A call a Stop may have let reach its receiver is never shown as failed.
 */
import type { JSONValue, ToolModelMessage } from 'ai'
import type { ChatEvent } from '../contract'
import { partText, toolPhase, type ToolPart } from '../fold/parts'

/** One call the model made: its id, the tool's name, its input. */
export interface ToolCall {
  call: string
  tool: string
  input: unknown
}

/** A `tool.state` event's payload: the state of one call of one answer, and what is known with it. */
export type ToolCallStateEvent = Extract<ChatEvent, { type: 'tool.state' }>['payload']

/** A state and what comes with it: a done call's result, a failed one's error, how an unknown one is settled. */
export type ToolCallOutcome = Pick<ToolCallStateEvent, 'state' | 'result' | 'error' | 'settle'>

/** A receiver's answer about one call: it has it (with what the call returns), it has not, or it cannot say. */
export type Verdict<R> = { done: true; result: R } | { done: false } | 'unknown'

// ---- the key ---------------------------------------------------------------------------------------------------

const KEY_PREFIX = 'tool:'
const KEY = /^tool:([^:]+):(.+)$/

/** The effect key of a tool call. */
export const toolCallKey = (tool: string, call: string): string => `${KEY_PREFIX}${tool}:${call}`

/** The tool and call an effect key names; undefined for any other effect (the model call). */
export function parseToolCallKey(key: string): { tool: string; call: string } | undefined {
  const match = KEY.exec(key)
  return match ? { tool: match[1], call: match[2] } : undefined
}

/** Whether any of these effect keys is a tool call's (a run that dispatched none has no call to settle). */
export const anyToolCallKey = (keys: readonly string[]): boolean => keys.some((key) => key.startsWith(KEY_PREFIX))

// ---- how each state is reached ---------------------------------------------------------------------------------

/** Why a live call threw, as the effect's record tells it (run-tool-call.ts classifies the error). */
export interface LiveCallFailure {
  /** 'not-dispatched': a Stop came first; 'unknown': a dead attempt's call nobody could settle; 'threw': anything else. */
  cause: 'not-dispatched' | 'unknown' | 'threw'
  message: string
  /** The run's signal had fired (a Stop, a lost claim): the call was cut off, not failed. */
  aborted: boolean
  /** What the receiver answered when asked about the cut-off call, if it was asked. */
  verdict?: Verdict<unknown>
  readOnly?: boolean
}

/** The state a live call that threw shows. */
export function stateOfLiveCall({ cause, message, aborted, verdict, readOnly }: LiveCallFailure): ToolCallOutcome {
  if (cause === 'not-dispatched') return { state: 'not-started' }
  if (cause === 'unknown') return { state: 'unknown', settle: 'operator' }
  if (!aborted) return { state: 'failed', error: message.slice(0, 2_000) }
  // Cut off by a Stop or a lost claim: a read changed nothing; a side effect is what its receiver says.
  if (readOnly) return { state: 'cancelled' }
  if (verdict && verdict !== 'unknown') return verdict.done ? { state: 'done', result: verdict.result } : { state: 'cancelled' }
  return { state: 'unknown', settle: 'operator' }
}

/** A tool call's effect as the store keeps it (the a2_effects row, as the operator view reads it). */
export interface StoredEffect {
  key: string
  status: string
  result: unknown
  error: unknown
}

/** The state a settled effect shows; undefined while it is not settled (INTENT, DISPATCHED) or not a tool call's. */
export function stateOfStoredEffect(effect: StoredEffect): ToolCallOutcome | undefined {
  if (!parseToolCallKey(effect.key)) return undefined
  const error = (effect.error ?? {}) as { message?: string; reconciled?: string }
  const byStatus: Record<string, ToolCallOutcome | undefined> = {
    DONE: { state: 'done', result: (effect.result as { value?: unknown } | null)?.value },
    // The receiver, asked, had no record of it: it did not happen. Any other failure is one.
    FAILED: error.reconciled === 'not done' ? { state: 'cancelled' } : { state: 'failed', error: (error.message ?? 'failed').slice(0, 2_000) },
    UNKNOWN: { state: 'unknown', settle: 'operator' },
    CANCELLED_BEFORE_DISPATCH: { state: 'not-started' },
  }
  return byStatus[effect.status]
}

/** How a successor's settling of a call its dead predecessor left running came out (settle-in-flight.ts). */
export type SettledCall = { settled: 'done'; result: unknown } | { settled: 'not-done' | 'unknown' | 'not-dispatched' }

/** The state a call left running shows once a successor settled it. */
export function stateOfSettledCall(outcome: SettledCall): ToolCallOutcome {
  switch (outcome.settled) {
    case 'done':
      return { state: 'done', result: outcome.result }
    case 'not-done':
      return { state: 'cancelled' }
    case 'unknown':
      return { state: 'unknown', settle: 'operator' }
    case 'not-dispatched':
      return { state: 'not-started' }
  }
}

/** The state an operator's verdict on an unknown call gives it: done (with what they know of the result), or did not happen. */
export function stateOfVerdict(verdict: { done: boolean; result?: unknown }): ToolCallOutcome {
  return verdict.done ? { state: 'done', result: verdict.result } : { state: 'cancelled' }
}

/** The calls of answer `of` whose last state is 'running', from the log after its generate. */
export function callsLeftRunning(of: string, later: readonly ChatEvent[]): ToolCallStateEvent[] {
  const last = new Map<string, ToolCallStateEvent>()
  for (const event of later) if (event.type === 'tool.state' && event.payload.of === of) last.set(event.payload.call, event.payload)
  return [...last.values()].filter((s) => s.state === 'running')
}

// ---- the words -------------------------------------------------------------------------------------------------

export interface ToolCallStatus {
  label: string
  detail?: string
  tone: 'busy' | 'done' | 'stopped' | 'failed' | 'unknown'
}

/**
 * What a tool call shows on the page (components/chat/answer-parts.tsx) and in an export
 * (server/export.ts): not started, running, done with its result, failed, stopped before it
 * happened, or may have happened (with how it will be settled).
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
      // the receiver is asked (the next attempt, settle-in-flight.ts, or the drain's end hook, answer/unfinished.ts).
      // Words for the reader, whoever stopped it (their Stop, mostly): no workers, operators or /runs (issue 36, item 5).
      return ended
        ? { label: 'May have happened', detail: 'Stopped mid-call; asking the receiver whether it arrived.', tone: 'unknown' }
        : { label: 'Running…', tone: 'busy' }
    case 'done':
      return { label: 'Done', tone: 'done' }
    case 'failed':
      return { label: 'Failed', detail: part.error, tone: 'failed' }
    case 'cancelled':
      return { label: 'Stopped — did not happen', detail: 'Stopped mid-call; the receiver has no record of it.', tone: 'stopped' }
    case 'awaiting-approval':
      // Ended while it waited (a Stop whose ending is not written yet): it never ran.
      if (ended) return { label: 'Not started', detail: 'Stopped before the tool ran.', tone: 'stopped' }
      if (part.decided === 'approve') return { label: 'Approved', detail: 'Starting the call…', tone: 'busy' }
      if (part.decided) return { label: part.decided === 'deny' ? 'Denied' : 'Expired', detail: 'It will not run.', tone: 'stopped' }
      return { label: 'Waiting for your approval', tone: 'busy' }
    case 'denied':
      return { label: 'Denied', detail: 'You denied this call; it did not run.', tone: 'stopped' }
    case 'expired':
      return { label: 'Expired', detail: 'Nobody approved it in time; it did not run.', tone: 'stopped' }
    case 'unknown':
      return {
        label: 'May have happened',
        detail:
          part.settle === 'reconcile'
            ? 'Stopped mid-call; it will be settled by asking the receiver.'
            : 'Stopped mid-call, and the receiver could not say whether it arrived.',
        tone: 'unknown',
      }
  }
}

/**
 * A call's arguments as the page shows them: the object the model called it with, or while it
 * streams the text so far; once its answer ended with the object incomplete (a Stop mid-arguments),
 * what that is, in words, with the partial text kept aside (`streamed`) for whoever wants it.
 */
export function describeToolInput(part: ToolPart, ended: boolean): { text: string; streamed?: string } | undefined {
  if (part.input !== undefined) return { text: JSON.stringify(part.input) }
  const streamed = partText(part)
  if (!streamed) return undefined
  return ended ? { text: ARGUMENTS_CUT_OFF, streamed } : { text: streamed }
}

export const ARGUMENTS_CUT_OFF = 'Arguments cut off at the Stop'

type ToolResultOutput = Extract<ToolModelMessage['content'][number], { type: 'tool-result' }>['output']

/** What the model is told of an earlier call's outcome in a later turn, from its state: never a made-up success. */
export function toolResultForModel(part: ToolPart): ToolResultOutput {
  switch (toolPhase(part)) {
    case 'done':
      return { type: 'json', value: (part.result ?? null) as JSONValue }
    case 'failed':
      return { type: 'error-text', value: `The call failed: ${part.error ?? 'no reason was recorded'}.` }
    // 'called': logged, but its answer ended with no state: it never dispatched (a dispatch writes 'running' first), as the page says.
    case 'called':
    case 'not-started':
      return { type: 'text', value: 'Not started: the answer was stopped before this call was made. It did not happen.' }
    case 'cancelled':
      return { type: 'text', value: 'Stopped mid-call, and the receiver has no record of it: it did not happen.' }
    case 'denied':
      return { type: 'text', value: 'The user denied this call: it was not made. Do not make it again unless the user asks.' }
    case 'expired':
      return { type: 'text', value: 'Nobody approved this call in time, so it was treated as denied: it was not made.' }
    // Still waiting in an answer that ended (a Stop): never made.
    case 'awaiting-approval':
      return { type: 'text', value: 'Not started: the answer was stopped while this call waited for approval. It did not happen.' }
    case 'unknown':
      return {
        type: 'text',
        value: `Its outcome is UNKNOWN: it may have happened; the receiver could not say. ${part.settle === 'operator' ? 'An operator will settle it.' : 'It will be settled by asking the receiver again.'}`,
      }
    default:
      // 'running' in an answer that has ended: its attempt died mid-call and no outcome was recorded.
      return { type: 'text', value: 'Its outcome is UNKNOWN: it may have happened; no outcome was recorded.' }
  }
}
