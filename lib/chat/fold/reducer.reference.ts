/**
 * The chat fold as it was first written: one event at a time, every change a fresh copy.
 * Quadratic, and simple enough to read at a glance: the oracle the fast fold in reducer.ts
 * is checked against (reducer.property.test.ts). Test-only.
 */
import type { ChatEvent } from '../contract'
import {
  answerText,
  isTerminal,
  latestBranch,
  type AnswerPart,
  type AnswerTurn,
  type ChatState,
  type Chunk,
  type ToolPart,
  type UserTurn,
} from './reducer'
import { compactParts, cutParts } from './parts'
import { addUsage } from './usage'

export function referenceReduce(state: ChatState, event: ChatEvent): ChatState {
  switch (event.type) {
    case 'message': {
      const parent = parentOf(state, event.payload)
      const edited = state.turns.find((t): t is UserTurn => t.kind === 'user' && t.id === event.payload.edits)
      const files = event.payload.files ?? (event.payload.edits ? edited?.files : undefined)
      const turn: UserTurn = { kind: 'user', id: event.id, index: event.index, text: event.payload.text, parent, ...(files?.length ? { files } : {}) }
      return { turns: [...movedOn(state.turns), turn] }
    }
    case 'generate': {
      // A regenerate is one more version of the answer to `for`; the one it follows is kept.
      const answer: AnswerTurn = {
        kind: 'assistant',
        id: event.id,
        for: event.payload.for,
        status: 'waiting',
        chunks: [],
        parts: [],
        text: '',
        attempt: 0,
        notes: [],
      }
      if (event.payload.model !== undefined) answer.model = event.payload.model
      if (event.payload.continues !== undefined) {
        // A Continue starts with the text the answer it continues shows now (its cut).
        const continued = state.turns.find((t): t is AnswerTurn => t.kind === 'assistant' && t.id === event.payload.continues)
        answer.continues = event.payload.continues
        answer.prefix = continued ? answerText(continued) : ''
        // And the calls it shows (its cut applied).
        answer.parts = continued ? continued.parts.filter((p) => p.kind === 'tool') : []
      }
      return { turns: [...movedOn(state.turns), answer] }
    }
    case 'chunk':
      return step(state, event, (answer) => ({ ...answer, chunks: [...answer.chunks, { index: event.index, delta: event.payload.delta }] }))
    case 'reasoning':
      return step(state, event, (answer) => {
        const last = answer.parts.at(-1)
        const chunk = { index: event.index, delta: event.payload.delta }
        // Reasoning goes on in the part it began, unless text or a tool call came between.
        if (last?.kind === 'reasoning' && (last.chunks.at(-1)?.index ?? -1) > (answer.chunks.at(-1)?.index ?? -1)) {
          return { ...answer, parts: [...answer.parts.slice(0, -1), { ...last, chunks: [...last.chunks, chunk] }] }
        }
        return { ...answer, parts: [...answer.parts, { kind: 'reasoning', index: event.index, chunks: [chunk], text: '' }] }
      })
    case 'tool.input':
      return step(state, event, (answer) =>
        withTool(answer, event.payload, event.index, (part) => ({
          ...part,
          inputChunks: [...part.inputChunks, { index: event.index, delta: event.payload.delta }],
        })),
      )
    case 'tool.call':
      return step(state, event, (answer) =>
        withTool(answer, event.payload, event.index, (part) => ({ ...part, input: event.payload.input, calledAt: event.index })),
      )
    case 'tool.state':
      // The call's answer, and the versions continuing it that show the call.
      return continuersOf(state, event.payload.of).reduce<ChatState>(
        (folded, id) =>
          updateAnswer(folded, id, (answer) =>
            id !== event.payload.of && !answer.parts.some((p) => p.kind === 'tool' && p.call === event.payload.call)
              ? answer
              : toolStateOf(answer, event, id === event.payload.of),
          ),
        state,
      )
    case 'tool.decision':
      return updateAnswer(state, event.payload.of, (answer) => {
        if (answer.status === 'stopped' || answer.lastSeenIndex !== undefined) return answer
        const part = answer.parts.find((p) => p.kind === 'tool' && p.call === event.payload.call) as ToolPart | undefined
        if (!part || part.state !== 'awaiting-approval' || part.decided) return answer
        return withTool(answer, part, event.index, (p) => ({ ...p, decided: event.payload.decision }))
      })
    case 'cancelled':
      return updateAnswer(state, event.payload.of, (answer) => {
        const { lastSeenIndex } = event.payload
        if (isTerminal(answer.status)) return cutFinished(answer, lastSeenIndex)
        return {
          ...answer,
          status: 'stopped',
          lastSeenIndex,
          chunks: answer.chunks.filter((c) => c.index <= lastSeenIndex),
          parts: cutParts(answer.parts, lastSeenIndex),
        }
      })
    case 'finished':
      return updateAnswer(state, event.payload.of, (answer, newest) => {
        if (isTerminal(answer.status) && answer.status !== 'stopped') return answer
        if (answer.status === 'stopped' && answer.text) return answer
        const status = answer.lastSeenIndex !== undefined || event.payload.reason === 'cancelled' ? 'stopped' : 'done'
        return {
          ...answer,
          status,
          finishReason: event.payload.reason,
          usage: addUsage(answer.usage, event.payload.usage),
          text: answer.chunks.map((c) => c.delta).join(''),
          chunks: [],
          ...(newest && status !== 'stopped' ? endsOf(answer) : { parts: compacted(answer.parts) }),
        }
      })
    case 'note.saved':
      return updateAnswer(state, event.payload.of, (answer) => ({ ...answer, notes: [...answer.notes, event.payload.note] }))
    case 'a2.failed':
      return updateAnswer(state, event.payload.of, (answer, newest) =>
        isTerminal(answer.status) && answer.status !== 'stopped'
          ? answer
          : {
              ...answer,
              status: answer.lastSeenIndex !== undefined ? 'stopped' : 'failed',
              error: event.payload.error.message,
              text: answer.chunks.map((c) => c.delta).join(''),
              chunks: [],
              ...(newest && answer.lastSeenIndex === undefined ? endsOf(answer) : { parts: compacted(answer.parts) }),
            },
      )
    case 'a2.renamed':
      return state
    default:
      throw new Error(`unhandled event type: ${JSON.stringify((event as { type?: string }).type)}`)
  }
}

/** A step of its answer's run: applied unless it is a straggler (after the cut or the end) or from a superseded attempt. */
function step(
  state: ChatState,
  event: Extract<ChatEvent, { payload: { of: string; attempt: number } }>,
  apply: (answer: AnswerTurn) => AnswerTurn,
): ChatState {
  return updateAnswer(state, event.payload.of, (answer) => {
    if (answer.lastSeenIndex !== undefined || isTerminal(answer.status)) return answer
    if (event.payload.attempt < answer.attempt) return answer
    return apply({ ...answer, status: 'streaming', attempt: event.payload.attempt })
  })
}

/** The answer with tool call `call` changed by `change`, added at the end (at `index`) first if it has none. */
/** A `tool.state` applied to its call's part in `answer`. */
function toolStateOf(answer: AnswerTurn, event: Extract<ChatEvent, { type: 'tool.state' }>, own: boolean): AnswerTurn {
  const spent = own && event.payload.usage ? { ...answer, usage: addUsage(answer.usage, event.payload.usage) } : answer
  return withTool(spent, event.payload, event.index, (part) => {
    const { state: callState, input, result, error, settle, approval } = event.payload
    const changed: ToolPart = { ...part, stateAt: part.stateAt ?? event.index, state: callState, input: part.input ?? input, result, error, settle }
    if (approval) changed.approval = approval
    return changed
  })
}

/** Answer `id` and the versions that continue it, or continue those. */
function continuersOf(state: ChatState, id: string): string[] {
  const chain = [id]
  for (const turn of state.turns)
    if (turn.kind === 'assistant' && turn.continues !== undefined && chain.includes(turn.continues) && !chain.includes(turn.id)) chain.push(turn.id)
  return chain
}

function withTool(
  answer: AnswerTurn,
  { call, tool }: { call: string; tool: string },
  index: number,
  change: (part: ToolPart) => ToolPart,
): AnswerTurn {
  const position = answer.parts.findIndex((p) => p.kind === 'tool' && p.call === call)
  if (position < 0) return { ...answer, parts: [...answer.parts, change({ kind: 'tool', index, call, tool, inputChunks: [], inputText: '' })] }
  return { ...answer, parts: answer.parts.map((p, i) => (i === position ? change(p as ToolPart) : p)) }
}

function compacted(parts: AnswerPart[]): AnswerPart[] {
  const copy = parts.slice()
  compactParts(copy)
  return copy
}

/** Where each of these chunks ended in their joined text: `[index, end offset]`. */
function endsIn(chunks: Chunk[]): Array<[number, number]> {
  return chunks.map((c, i) => [
    c.index,
    chunks
      .slice(0, i + 1)
      .map((x) => x.delta)
      .join('').length,
  ])
}

/** What a finished answer keeps while it is the newest turn: its compacted parts, and the chunk ends of its text and of each part. */
function endsOf(answer: AnswerTurn): Partial<AnswerTurn> {
  if (answer.chunks.length === 0 && answer.parts.length === 0) return { parts: compacted(answer.parts) }
  const parts = answer.parts.map((p): AnswerPart =>
    p.kind === 'reasoning' ? { ...p, ends: endsIn(p.chunks) } : { ...p, inputEnds: endsIn(p.inputChunks) },
  )
  return { chunkEnds: endsIn(answer.chunks), parts: compacted(parts) }
}

/** The parts without their chunk ends. */
function endless(parts: AnswerPart[]): AnswerPart[] {
  return parts.map((p) => {
    if (p.kind === 'reasoning') {
      const { ends: _ends, ...rest } = p
      return rest
    }
    const { inputEnds: _ends, ...rest } = p
    return rest
  })
}

/** A new turn: the one that was newest forgets its chunk ends. */
function movedOn(turns: ChatState['turns']): ChatState['turns'] {
  const last = turns.at(-1)
  if (last?.kind !== 'assistant' || !last.chunkEnds) return turns
  const { chunkEnds: _dropped, ...rest } = last
  return [...turns.slice(0, -1), { ...rest, parts: endless(rest.parts) }]
}

/** A compacted text split back at its chunk ends. */
function split(text: string, ends: Array<[number, number]> | undefined): Chunk[] {
  return (ends ?? []).map(([index, end], i) => ({ index, delta: text.slice(i === 0 ? 0 : ends![i - 1][1], end) }))
}

/**
 * A Stop after the end: the text the reader saw (chunks up to lastSeenIndex) stays, the rest goes aside; the parts are
 * cut as a Stop in time cuts them; nothing unseen: unchanged.
 */
function cutFinished(answer: AnswerTurn, lastSeenIndex: number): AnswerTurn {
  if (!answer.chunkEnds) return answer
  const seen = answer.chunkEnds.filter(([index]) => index <= lastSeenIndex).at(-1)?.[1] ?? 0
  const unseen = (ends: Array<[number, number]> | undefined) => (ends ?? []).some(([index]) => index > lastSeenIndex)
  const partsUnseen = answer.parts.some((p) =>
    p.kind === 'reasoning' ? unseen(p.ends) : unseen(p.inputEnds) || (p.calledAt !== undefined && p.calledAt > lastSeenIndex),
  )
  if (seen >= answer.text.length && !partsUnseen) return answer
  const asChunks = answer.parts.map((p): AnswerPart =>
    p.kind === 'reasoning'
      ? { ...p, chunks: split(p.text, p.ends), text: '' }
      : { ...p, inputChunks: split(p.inputText, p.inputEnds), inputText: '' },
  )
  const { chunkEnds: _dropped, ...rest } = answer
  return {
    ...rest,
    status: 'stopped',
    lastSeenIndex,
    finishedBeforeStop: true,
    text: answer.text.slice(0, seen),
    rest: answer.text.slice(seen),
    parts: endless(compacted(cutParts(asChunks, lastSeenIndex))),
  }
}

function updateAnswer(state: ChatState, id: string, update: (answer: AnswerTurn, newest: boolean) => AnswerTurn): ChatState {
  let changed = false
  const turns = state.turns.map((turn, position) => {
    if (turn.kind !== 'assistant' || turn.id !== id) return turn
    const next = update(turn, position === state.turns.length - 1)
    changed ||= next !== turn
    return next
  })
  return changed ? { turns } : state
}

/**
 * Where a new message hangs: beside the message it edits (a new version of it), after the
 * answer it names, or — for logs from before `after` existed — after the latest branch's end.
 */
function parentOf(state: ChatState, payload: { edits?: string; after?: string }): string | null {
  if (payload.edits) {
    const edited = state.turns.find((t) => t.kind === 'user' && t.id === payload.edits)
    if (edited?.kind === 'user') return edited.parent
  }
  if (payload.after && state.turns.some((t) => t.kind === 'assistant' && t.id === payload.after)) return payload.after
  const branch = latestBranch(state.turns)
  const last = branch.at(-1)
  if (!last) return null
  return last.kind === 'assistant' ? last.id : last.parent
}
