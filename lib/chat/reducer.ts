/**
 * The chat's fold: a pure, exhaustive reducer over the session log, shared by the
 * server (which folds history into model messages) and the browser (which renders it).
 * Adding an event type to the contract breaks the compile here until it is handled.
 */
import type { ChatEvent } from './contract'

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
}

export type AnswerStatus = 'waiting' | 'streaming' | 'done' | 'stopped' | 'failed'

export interface AnswerTurn {
  kind: 'assistant'
  /** The `generate` event's id: what Stop and regenerate name. */
  id: string
  /** The user message it answers. */
  for: string
  status: AnswerStatus
  /** Per-chunk until the terminal event, so a cut can be exact. */
  chunks: Chunk[]
  /** The compacted text, set at the terminal event. */
  text: string
  /**
   * The attempt that wrote the latest chunk. A successor's chunks continue its predecessors'
   * (one answer across attempts); chunks from an older attempt than this are dropped.
   */
  attempt: number
  /** The user stopped it, having seen up to this index. */
  cutAt?: number
  finishReason?: string
  error?: string
  usage?: { inputTokens?: number; outputTokens?: number }
  notes: string[]
}

export type Turn = UserTurn | AnswerTurn

export interface ChatState {
  /** Every turn of every version, in log order: versions.ts picks the branch on screen. */
  turns: Turn[]
}

export const initialChatState: ChatState = { turns: [] }

/** An event as the reducer needs it: optimistic events from this browser have index -1. */
export type FoldableEvent = Pick<ChatEvent, 'id' | 'type' | 'payload' | 'index'> & ChatEvent

export function reduceChat(state: ChatState, event: ChatEvent): ChatState {
  switch (event.type) {
    case 'message': {
      const parent = parentOf(state, event.payload)
      return { turns: [...state.turns, { kind: 'user', id: event.id, index: event.index, text: event.payload.text, parent }] }
    }
    case 'generate': {
      // A regenerate is one more version of the answer to `for`; the one it follows is kept.
      const answer: AnswerTurn = {
        kind: 'assistant',
        id: event.id,
        for: event.payload.for,
        status: 'waiting',
        chunks: [],
        text: '',
        attempt: 0,
        notes: [],
      }
      return { turns: [...state.turns, answer] }
    }
    case 'chunk':
      return updateAnswer(state, event.payload.of, (answer) => {
        // Stragglers that land after the cut, or after the end, vanish.
        if (answer.cutAt !== undefined || isTerminal(answer.status)) return answer
        // A superseded attempt writes nothing (its appends are fenced); one that got through anyway is dropped.
        if (event.payload.attempt < answer.attempt) return answer
        // A successor continues from the text its predecessors committed (generate sends it to
        // the model as the answer so far), so every attempt's chunks stay, in log order: text a
        // reader has seen never disappears, and a cut at lastSeenIndex keeps exactly what they saw.
        return {
          ...answer,
          status: 'streaming',
          attempt: event.payload.attempt,
          chunks: [...answer.chunks, { index: event.index, delta: event.payload.delta }],
        }
      })
    case 'cancelled':
      return updateAnswer(state, event.payload.of, (answer) => {
        if (isTerminal(answer.status)) return answer // it had already ended: nothing to cut
        const { lastSeenIndex } = event.payload
        return {
          ...answer,
          status: 'stopped',
          cutAt: lastSeenIndex,
          chunks: answer.chunks.filter((c) => c.index <= lastSeenIndex),
        }
      })
    case 'finished':
      return updateAnswer(state, event.payload.of, (answer) => {
        if (isTerminal(answer.status) && answer.status !== 'stopped') return answer
        if (answer.status === 'stopped' && answer.text) return answer
        return {
          ...answer,
          status: answer.cutAt !== undefined || event.payload.reason === 'cancelled' ? 'stopped' : 'done',
          finishReason: event.payload.reason,
          usage: event.payload.usage,
          text: answer.chunks.map((c) => c.delta).join(''),
          chunks: [],
        }
      })
    case 'note.saved':
      return updateAnswer(state, event.payload.of, (answer) => ({ ...answer, notes: [...answer.notes, event.payload.note] }))
    case 'a2.failed':
      return updateAnswer(state, event.payload.of, (answer) =>
        isTerminal(answer.status) && answer.status !== 'stopped'
          ? answer
          : {
              ...answer,
              status: answer.cutAt !== undefined ? 'stopped' : 'failed',
              error: event.payload.error.message,
              text: answer.chunks.map((c) => c.delta).join(''),
              chunks: [],
            },
      )
    case 'a2.renamed':
      return state // the title is the sessions list's; the turns are unchanged
    default:
      return assertNever(event)
  }
}

export function foldChat(events: Iterable<ChatEvent>, state: ChatState = initialChatState): ChatState {
  for (const event of events) state = reduceChat(state, event)
  return state
}

/** The text an answer shows: compacted at its end, joined from its chunks before. */
export function answerText(answer: AnswerTurn): string {
  return answer.chunks.length > 0 ? answer.chunks.map((c) => c.delta).join('') : answer.text
}

export function isTerminal(status: AnswerStatus): boolean {
  return status === 'done' || status === 'stopped' || status === 'failed'
}

/** The answer still being written, if any: what Stop applies to. */
export function activeAnswer(state: ChatState): AnswerTurn | undefined {
  for (let i = state.turns.length - 1; i >= 0; i--) {
    const turn = state.turns[i]
    if (turn.kind === 'assistant' && !isTerminal(turn.status)) return turn
  }
  return undefined
}

function updateAnswer(state: ChatState, id: string, update: (answer: AnswerTurn) => AnswerTurn): ChatState {
  let changed = false
  const turns = state.turns.map((turn) => {
    if (turn.kind !== 'assistant' || turn.id !== id) return turn
    const next = update(turn)
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

/** The branch made of every slot's newest version (what a fresh page shows). */
export function latestBranch(turns: Turn[]): Turn[] {
  const newest = new Map<string, Turn>()
  for (const turn of turns) newest.set(slotOf(turn), turn)
  const branch: Turn[] = []
  for (let slot = ROOT_SLOT, turn = newest.get(slot); turn; turn = newest.get(slot)) {
    branch.push(turn)
    slot = nextSlot(turn)
  }
  return branch
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

function assertNever(event: never): never {
  throw new Error(`unhandled event type: ${JSON.stringify((event as { type?: string }).type)}`)
}
