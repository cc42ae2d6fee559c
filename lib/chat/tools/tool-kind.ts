/**
 * The door a tool kind comes in by: what the model may call, how a call runs, and whether it can
 * be asked about afterwards. chat-tools.ts offers every configured kind to the model and runs each
 * call through run-tool-call.ts (its effect, its states in the log); a kind says only what is its own.
 * Adding one (an MCP server's tools, say) is a file in kinds/ and a line in chat-tools.ts's configuration.
 */
import type { FlexibleSchema } from 'ai'
import type { RunContext } from '@/lib/a2/server'
import type { Chat } from '../contract'
import type { Verdict } from './tool-call'

/** One call as a kind's dispatch sees it. */
export interface ToolDispatch {
  /** The effect's idempotency key: a repeat of it must be one delivery; lookup asks by it. */
  idempotencyKey: string
  /** The run's signal: a Stop (or a lost claim) aborts it, and the call's own request must close. */
  signal: AbortSignal
  /** The session the answer is in, and the answer (its generate event's id). */
  sessionId: string
  answer: string
  /**
   * The receiver made the call a task of its own (MCP Tasks): its id goes into the log with the
   * call's running state, before the call settles, so `lookup` can be asked about it after a crash.
   */
  recordTask(task: string): Promise<void>
}

/** What the log recorded of a call while it ran, for `lookup` (a successor has nothing else of it). */
export interface RecordedCall {
  task?: string
}

// A list of kinds holds every input and result type at once (ToolKind[]): their defaults are `any` on purpose.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface ToolKind<I = any, R = any> {
  /** What the model calls it by; also the middle of the call's effect key (tool-call.ts). */
  name: string
  description: string
  inputSchema: FlexibleSchema<I>
  /**
   * Changes nothing outside (a read): a call cut off is simply not done, and two at once do no
   * harm. Else it is a side effect: cut off mid-call it is asked about (`lookup`), or unknown.
   */
  readOnly?: boolean
  /** False: known (calls it made before are still settled) but not offered to the model now. Default true. */
  offered?: boolean
  /**
   * A call waits for the user's yes before it runs (answer/approvals.ts): offered to the model
   * without running, the answer ends waiting, and a decision continues it. `server` is what the
   * page shows beside the tool (an MCP server's name).
   */
  approval?: { server: string }
  /** Runs the call. */
  dispatch(input: I, call: ToolDispatch): Promise<R>
  /**
   * Asks the receiver whether a call under this idempotency key happened: done (with its result),
   * not done, or 'unknown'; `recorded` is what the call's running state recorded (its task), when known.
   */
  lookup?(idempotencyKey: string, recorded?: RecordedCall): Promise<Verdict<R>>
  /** What the model is told of a done call (default: its result); it may record more in the answer's log first. */
  toModel?(result: R, input: I, run: RunContext<Chat, 'generate'>): Promise<unknown>
}
