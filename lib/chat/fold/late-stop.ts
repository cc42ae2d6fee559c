/**
 * A Stop that reaches the log after its answer finished: the browser was cut off (or the app
 * was down) while the worker wrote the rest. The rule is what the reader saw, not when the
 * Stop arrived, so the fold keeps what it needs to cut a finished answer at the Stop's
 * `lastSeenIndex`: where each chunk ended in the compacted text. Only the session's newest
 * turn keeps them, until the conversation moves on (a message or an answer after it): a late
 * Stop comes from a reader still looking at that answer, and every answer keeping two
 * numbers a chunk would add ~1 MiB to a checkpoint of 100k events (~95k chunks).
 * The cut keeps the unseen rest of the text aside (`rest`): the view offers it, never pushes it
 * on screen. Its reasoning and tool calls (parts.ts) keep their chunk ends the same way and are
 * cut as a Stop in time cuts them (`cutParts`): what streamed past the cut goes, a tool call
 * whose state is known stays. The unseen rest of a part is not kept: a Stop in time drops it too.
 */
import { compactParts, cutParts, type AnswerPart } from './parts'

/** The part of an answer a late Stop reads and changes (the reducer's AnswerTurn has it all; this file imports nothing of it). */
export interface FinishedAnswer {
  text: string
  status: string
  chunkEnds?: Array<[index: number, end: number]>
  parts: AnswerPart[]
  rest?: string
  lastSeenIndex?: number
  finishedBeforeStop?: boolean
}

/** Where each chunk ended in the joined text, as `[chunk index, end offset]`: what a later cut at an index needs. */
export function chunkEndsOf(chunks: ReadonlyArray<{ index: number; delta: string }>): Array<[index: number, end: number]> {
  let end = 0
  return chunks.map((chunk) => [chunk.index, (end += chunk.delta.length)])
}

/** The length of the text a reader who saw the log up to `lastSeenIndex` saw, or undefined when nothing of it is unseen. */
function seenLength(answer: FinishedAnswer, lastSeenIndex: number): number | undefined {
  if (!answer.chunkEnds) return undefined
  let seen = 0
  for (const [index, end] of answer.chunkEnds) {
    if (index > lastSeenIndex) break
    seen = end
  }
  return seen < answer.text.length ? seen : undefined
}

/** The parts as a finished answer keeps them while it is the newest turn: each with where its chunks ended (before compaction). */
export function withPartEnds(parts: readonly AnswerPart[]): AnswerPart[] {
  return parts.map((part) =>
    part.kind === 'reasoning' ? { ...part, ends: chunkEndsOf(part.chunks) } : { ...part, inputEnds: chunkEndsOf(part.inputChunks) },
  )
}

/** The parts without their chunk ends: the conversation moved on, or the answer was cut. */
export function withoutPartEnds(parts: readonly AnswerPart[]): AnswerPart[] {
  return parts.map((part) => {
    if (part.kind === 'reasoning') {
      const { ends: _ends, ...kept } = part
      return kept
    }
    const { inputEnds: _ends, ...kept } = part
    return kept
  })
}

/** A compacted text and its chunk ends back as the chunks they were joined from. */
function chunksOf(text: string, ends: ReadonlyArray<[index: number, end: number]> | undefined) {
  let start = 0
  return (ends ?? []).map(([index, end]) => ({ index, delta: text.slice(start, (start = end)) }))
}

/** Whether a reader who saw the log up to `lastSeenIndex` missed a step of some part: a reasoning or input chunk, or a call. */
function partsMissed(parts: readonly AnswerPart[], lastSeenIndex: number): boolean {
  const past = (ends: ReadonlyArray<[number, number]> | undefined) => (ends ?? []).some(([index]) => index > lastSeenIndex)
  return parts.some((part) =>
    part.kind === 'reasoning' ? past(part.ends) : past(part.inputEnds) || (part.calledAt !== undefined && part.calledAt > lastSeenIndex),
  )
}

/** Whether a Stop at `lastSeenIndex` cuts this finished answer: it kept its chunk ends and the reader missed some of it. */
export function cutsFinished(answer: FinishedAnswer, lastSeenIndex: number): boolean {
  return seenLength(answer, lastSeenIndex) !== undefined || (answer.chunkEnds !== undefined && partsMissed(answer.parts, lastSeenIndex))
}

/** Cuts a finished answer (the fold's own copy) at what the reader saw; the rest of its text is kept aside, offered. */
export function cutFinished(answer: FinishedAnswer, lastSeenIndex: number): void {
  if (!cutsFinished(answer, lastSeenIndex)) return
  const seen = seenLength(answer, lastSeenIndex) ?? answer.text.length
  answer.rest = answer.text.slice(seen)
  answer.text = answer.text.slice(0, seen)
  // Each part back as its chunks, cut as a Stop in time cuts it, compacted again: the same parts the reader's own fold shows.
  const parts = cutParts(
    answer.parts.map((part) =>
      part.kind === 'reasoning'
        ? { ...part, chunks: chunksOf(part.text, part.ends), text: '' }
        : { ...part, inputChunks: chunksOf(part.inputText, part.inputEnds), inputText: '' },
    ),
    lastSeenIndex,
  )
  compactParts(parts)
  answer.parts = withoutPartEnds(parts)
  answer.status = 'stopped'
  answer.lastSeenIndex = lastSeenIndex
  answer.finishedBeforeStop = true
  delete answer.chunkEnds
}
