/**
 * A Stop that reaches the log after its answer finished: the browser was cut off (or the app
 * was down) while the worker wrote the rest. The rule is what the reader saw, not when the
 * Stop arrived, so the fold keeps what it needs to cut a finished answer at the Stop's
 * `lastSeenIndex`: where each chunk ended in the compacted text. Only the session's newest
 * turn keeps them, until the conversation moves on (a message or an answer after it): a late
 * Stop comes from a reader still looking at that answer, and every answer keeping two
 * numbers a chunk would add ~1 MiB to a checkpoint of 100k events (~95k chunks).
 * The cut keeps the unseen rest aside (`rest`): the view offers it, never pushes it on screen.
 */

/** The part of an answer a late Stop reads and changes (the reducer's AnswerTurn has it all; this file imports nothing of it). */
export interface FinishedAnswer {
  text: string
  status: string
  chunkEnds?: Array<[index: number, end: number]>
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

/** Whether a Stop at `lastSeenIndex` cuts this finished answer: it kept its chunk ends and the reader missed some of it. */
export function cutsFinished(answer: FinishedAnswer, lastSeenIndex: number): boolean {
  return seenLength(answer, lastSeenIndex) !== undefined
}

/** Cuts a finished answer (the fold's own copy) at what the reader saw; the rest is kept aside, offered. */
export function cutFinished(answer: FinishedAnswer, lastSeenIndex: number): void {
  const seen = seenLength(answer, lastSeenIndex)
  if (seen === undefined) return
  answer.rest = answer.text.slice(seen)
  answer.text = answer.text.slice(0, seen)
  answer.status = 'stopped'
  answer.lastSeenIndex = lastSeenIndex
  answer.finishedBeforeStop = true
  delete answer.chunkEnds
}
