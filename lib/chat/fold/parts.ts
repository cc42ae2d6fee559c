/**
 * An answer's parts besides its text: reasoning and tool calls, in log order, as the fold
 * (reducer.ts) keeps them. A part shows what its steps streamed up to a Stop's `lastSeenIndex`
 * and nothing past it; a tool call's state (`tool.state`, no step) shows whenever it lands,
 * cut or not, since it tells what happened outside the log.
 */
import type { ToolCallState } from '../contract'

export interface PartChunk {
  index: number
  delta: string
}

export interface ReasoningPart {
  kind: 'reasoning'
  /** Where it begins in the log: its first kept chunk. */
  index: number
  /** Per-chunk until the terminal event, so a cut can be exact. */
  chunks: PartChunk[]
  /** The compacted reasoning, set at the terminal event. */
  text: string
  /** Where each chunk ended in `text`: kept by the newest finished answer only, for a Stop that lands after it (late-stop.ts). */
  ends?: Array<[index: number, end: number]>
}

export interface ToolPart {
  kind: 'tool'
  /** Where it begins in the log: the first kept of its input, its call, its first state. */
  index: number
  /** The model's tool call id. */
  call: string
  tool: string
  /** The input as it streamed, per chunk until the terminal event. */
  inputChunks: PartChunk[]
  /** The compacted streamed input, set at the terminal event. */
  inputText: string
  /** Where each input chunk ended in `inputText`: kept as a reasoning part's `ends` are. */
  inputEnds?: Array<[index: number, end: number]>
  /** The parsed input: from the complete call, or from its state. */
  input?: unknown
  /** Index of the `tool.call` step, while kept. */
  calledAt?: number
  /** From the call's effect record: unset while only the model's side of the call is known. */
  state?: ToolCallState
  /** Index of the call's first `tool.state`. */
  stateAt?: number
  result?: unknown
  error?: string
  settle?: 'reconcile' | 'operator'
  /** A call that waits for the user's yes (answer/approvals.ts): its server, its arguments' hash, when it expires. */
  approval?: ToolApproval
  /** The first decision on the waiting call (`tool.decision`), once one is in the log: its state follows when the call is run or refused. */
  decided?: ToolDecision
}

export interface ToolApproval {
  server: string
  args: string
  expiresAt: number
  answerIndex: number
}

export type ToolDecision = 'approve' | 'deny' | 'expired'

export type AnswerPart = ReasoningPart | ToolPart

/** What a tool call shows: its effect's state, or how far the model got with it. */
export function toolPhase(part: ToolPart): ToolCallState | 'input' | 'called' {
  return part.state ?? (part.calledAt !== undefined ? 'called' : 'input')
}

/** A part's streamed text: compacted at the end, joined from its chunks before. */
export function partText(part: AnswerPart): string {
  const chunks = part.kind === 'reasoning' ? part.chunks : part.inputChunks
  const compacted = part.kind === 'reasoning' ? part.text : part.inputText
  return chunks.length > 0 ? chunks.map((c) => c.delta).join('') : compacted
}

/**
 * The parts a reader who saw the log up to `lastSeenIndex` keeps, each the fold's own copy:
 * steps past it go; a tool call whose state is known stays (what happened outside the log is
 * shown, cut or not), placed where its first kept event is.
 */
export function cutParts(parts: readonly AnswerPart[], lastSeenIndex: number): AnswerPart[] {
  const kept: AnswerPart[] = []
  for (const part of parts) {
    if (part.kind === 'reasoning') {
      const chunks = part.chunks.filter((c) => c.index <= lastSeenIndex)
      if (chunks.length > 0) kept.push({ ...part, chunks, index: chunks[0].index })
      continue
    }
    const cut: ToolPart = { ...part, inputChunks: part.inputChunks.filter((c) => c.index <= lastSeenIndex) }
    if (cut.calledAt !== undefined && cut.calledAt > lastSeenIndex) {
      delete cut.calledAt
      if (cut.stateAt === undefined) delete cut.input
    }
    const starts = [cut.inputChunks[0]?.index, cut.calledAt, cut.stateAt].filter((i): i is number => i !== undefined)
    if (starts.length > 0) kept.push({ ...cut, index: Math.min(...starts) })
  }
  return kept.sort((a, b) => a.index - b.index)
}

/** At the terminal event each part's chunks become one string, as the answer's text does. */
export function compactParts(parts: AnswerPart[]): void {
  for (const [i, part] of parts.entries()) {
    if (part.kind === 'reasoning' && part.chunks.length > 0) parts[i] = { ...part, text: partText(part), chunks: [] }
    if (part.kind === 'tool' && part.inputChunks.length > 0) parts[i] = { ...part, inputText: partText(part), inputChunks: [] }
  }
}
