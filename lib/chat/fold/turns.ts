/**
 * The fold's shapes (reducer.ts folds the log into them): a ChatState is every turn of every
 * version in log order; versions share a slot (versions.ts picks the branch on screen).
 */
import type { FileRef, FinishReason } from '../contract'
import type { AnswerPart } from './parts'

export interface Chunk {
  index: number
  delta: string
}

export interface UserTurn {
  kind: 'user'
  id: string
  index: number
  text: string
  /**
   * The answer this message follows, or null for the conversation's first message. Messages
   * with the same parent are versions of one another (an edit, or a message sent after an
   * older version of that answer); see versions.ts.
   */
  parent: string | null
  /** The files it carries (references), or those of the message it edits when the edit named none. */
  files?: FileRef[]
}

export type AnswerStatus = 'waiting' | 'streaming' | 'done' | 'stopped' | 'failed'

export interface AnswerTurn {
  kind: 'assistant'
  /** The `generate` event's id: what Stop and regenerate name. */
  id: string
  /** The user message it answers. */
  for: string
  /** The configured model's id its generate named (unset: the server's default). */
  model?: string
  /** The stopped answer this version continues (Continue after Stop). */
  continues?: string
  /** That answer's text as the fold showed it when this one was asked for (its cut): shown before this one's own text, never cut. */
  prefix?: string
  status: AnswerStatus
  /** Per-chunk until the terminal event, so a cut can be exact. */
  chunks: Chunk[]
  /** Its reasoning and tool calls, in log order (parts.ts); the text is `chunks`/`text`. */
  parts: AnswerPart[]
  /** The compacted text, set at the terminal event. */
  text: string
  /**
   * The attempt that wrote the latest chunk. A successor's chunks continue its predecessors'
   * (one answer across attempts); chunks from an older attempt than this are dropped.
   */
  attempt: number
  /** The user stopped it, having seen the log up to this index (the Stop's `lastSeenIndex`). */
  lastSeenIndex?: number
  /**
   * Where each chunk ended in `text`, as `[chunk index, end offset]`: kept at the terminal event
   * by the session's newest turn only, until the conversation moves on, so that a Stop landing
   * after the end can still cut at `lastSeenIndex` (late-stop.ts).
   */
  chunkEnds?: Array<[index: number, end: number]>
  /** The Stop reached the log after the answer had finished: `text` is what the reader saw, `rest` what was written after. */
  finishedBeforeStop?: true
  /** The part written after what the reader saw, when the answer had finished before their Stop landed: offered, not shown. */
  rest?: string
  finishReason?: FinishReason
  error?: string
  /** `counted`: the app counted the tokens because the provider reported none (a Stop). */
  usage?: { inputTokens?: number; outputTokens?: number; counted?: true }
  notes: string[]
}

export type Turn = UserTurn | AnswerTurn

export interface ChatState {
  /** Every turn of every version, in log order: versions.ts picks the branch on screen. */
  turns: Turn[]
}

export const initialChatState: ChatState = { turns: [] }

export function isTerminal(status: AnswerStatus): boolean {
  return status === 'done' || status === 'stopped' || status === 'failed'
}

/** The slot of the first message. */
export const ROOT_SLOT = 'u:'

/** Versions share a slot: a message's is its parent answer; an answer's is the message it answers. */
export function slotOf(turn: Turn): string {
  return turn.kind === 'user' ? `u:${turn.parent ?? ''}` : `a:${turn.for}`
}

/** The slot that follows a turn on its branch. */
export function nextSlot(turn: Turn): string {
  return turn.kind === 'user' ? `a:${turn.id}` : `u:${turn.id}`
}
