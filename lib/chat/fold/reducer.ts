/**
 * The chat's fold: a pure, exhaustive reducer over the session log, shared by the
 * server (which folds history into model messages) and the browser (which renders it).
 * Adding an event type to the contract breaks the compile here until it is handled.
 */
import type { ChatEvent } from '../contract'
import { DraftTurns } from './draft-turns'
import { indexOf } from './turn-index'
import { chunkEndsOf, cutFinished, cutsFinished, withoutPartEnds, withPartEnds } from './late-stop'
import { compactParts, cutParts, type AnswerPart, type ReasoningPart, type ToolPart } from './parts'
import { addUsage } from './usage'
import { initialChatState, isTerminal, slotOf, nextSlot, ROOT_SLOT, type AnswerTurn, type ChatState, type Turn, type UserTurn } from './turns'

export type { AnswerPart, ReasoningPart, ToolPart } from './parts'
export type { AnswerStatus, AnswerTurn, ChatState, Chunk, Turn, UserTurn } from './turns'
export { initialChatState, isTerminal, nextSlot, ROOT_SLOT, slotOf } from './turns'

/** An event as the reducer needs it: optimistic events from this browser have index -1. */
export type FoldableEvent = Pick<ChatEvent, 'id' | 'type' | 'payload' | 'index'> & ChatEvent

/** One event folded into a state: `foldChat([event], state)`. */
export function reduceChat(state: ChatState, event: ChatEvent): ChatState {
  return foldChat([event], state)
}

/**
 * Folds events onto a state in time linear in the events plus the turns: a session of 100k
 * events folds in well under a second. (Copying the turn list and the answer's chunk array
 * at every chunk made it quadratic: 68 s for 110k events, and a worker folding a long
 * session's history lost its 15 s lease.) Pure from outside: the state passed in is never
 * changed, and it comes back as is when no event changed it.
 */
export function foldChat(events: Iterable<ChatEvent>, state: ChatState = initialChatState): ChatState {
  const draft = new ChatDraft(state)
  for (const event of events) draft.apply(event)
  return draft.result()
}

/**
 * One fold's working copy: the turn list (draft-turns.ts) and the parts this fold created or
 * copied (of answers it owns), which it may change in place. Each event type has its handler.
 */
class ChatDraft {
  private readonly turns: DraftTurns
  /** Parts created or copied by this fold (of owned answers): ours to change in place. */
  private readonly ownedParts = new WeakSet<AnswerPart>()

  constructor(base: ChatState) {
    this.turns = new DraftTurns(base)
  }

  result(): ChatState {
    return this.turns.result()
  }

  apply(event: ChatEvent): void {
    switch (event.type) {
      case 'message':
        return this.message(event)
      case 'generate':
        return this.generate(event)
      case 'chunk':
        return this.step(event, (mine) => void mine.chunks.push({ index: event.index, delta: event.payload.delta }))
      case 'reasoning':
        return this.step(event, (mine) => this.reasoning(mine, event))
      case 'tool.input':
        return this.step(event, (mine) => {
          this.toolPart(mine, event.payload, event.index).inputChunks.push({ index: event.index, delta: event.payload.delta })
        })
      case 'tool.call':
        return this.step(event, (mine) => {
          const part = this.toolPart(mine, event.payload, event.index)
          part.input = event.payload.input
          part.calledAt = event.index
        })
      case 'tool.state':
        return this.toolState(event)
      case 'tool.decision':
        return this.toolDecision(event)
      case 'cancelled':
        return this.cancelled(event)
      case 'finished':
        return this.finished(event)
      case 'note.saved':
        return this.turns.updateAnswers(event.payload.of, (_answer, own) => {
          own().notes.push(event.payload.note)
        })
      case 'a2.failed':
        return this.failed(event)
      case 'a2.renamed':
        return // the title is the sessions list's; the turns are unchanged
      default:
        return assertNever(event)
    }
  }

  private message(event: Extract<ChatEvent, { type: 'message' }>): void {
    const turn: UserTurn = { kind: 'user', id: event.id, index: event.index, text: event.payload.text, parent: this.turns.parentOf(event.payload) }
    const files = this.turns.filesOf(event.payload)
    if (files?.length) turn.files = files
    this.add(turn)
  }

  private generate(event: Extract<ChatEvent, { type: 'generate' }>): void {
    // A regenerate or a Continue is one more version of the answer to `for`; the one it follows is kept.
    const { for: message, model, continues } = event.payload
    const answer: AnswerTurn = {
      kind: 'assistant',
      id: event.id,
      for: message,
      status: 'waiting',
      chunks: [],
      parts: [],
      text: '',
      attempt: 0,
      notes: [],
    }
    if (model !== undefined) answer.model = model
    if (continues !== undefined) {
      answer.continues = continues
      answer.prefix = this.shownText(continues)
      // And the calls it shows (its cut applied): what happened stays in view, and the model is told of it (answer/history.ts).
      answer.parts = this.shownCalls(continues)
    }
    this.add(answer)
  }

  private reasoning(mine: AnswerTurn, event: Extract<ChatEvent, { type: 'reasoning' }>): void {
    const last = mine.parts.at(-1)
    // Reasoning goes on in the part it began, unless text or a tool call came between.
    const goesOn = last?.kind === 'reasoning' && (last.chunks.at(-1)?.index ?? -1) > (mine.chunks.at(-1)?.index ?? -1)
    const part = goesOn ? this.ownPart<ReasoningPart>(mine, mine.parts.length - 1) : undefined
    if (part) part.chunks.push({ index: event.index, delta: event.payload.delta })
    else this.addPart(mine, { kind: 'reasoning', index: event.index, chunks: [{ index: event.index, delta: event.payload.delta }], text: '' })
  }

  /**
   * No step: what the call did outside the log shows whenever it is known, after a cut or the end
   * too, and in the versions that continue its answer (they show its calls), if one was asked for first.
   */
  private toolState(event: Extract<ChatEvent, { type: 'tool.state' }>): void {
    const { of, call } = event.payload
    const showsCall = (answer: AnswerTurn) => answer.parts.some((p) => p.kind === 'tool' && p.call === call)
    for (const id of [of, ...this.continuersOf(of)])
      this.turns.updateAnswers(id, (answer, own) => {
        if (id !== of && !showsCall(answer)) return
        const { state, input, result, error, settle } = event.payload
        const part = this.toolPart(own(), event.payload, event.index)
        part.stateAt ??= event.index
        part.state = state
        if (input !== undefined) part.input ??= input
        part.result = result
        part.error = error
        part.settle = settle
        if (event.payload.approval) part.approval = event.payload.approval
        // What the model call that made the wait cost: the answer's own, never a continuing version's.
        if (id === of && event.payload.usage) own().usage = addUsage(answer.usage, event.payload.usage)
      })
  }

  /** The first decision on a waiting call of an answer not stopped is the one that counts (answer/approvals.ts); later ones change nothing. */
  private toolDecision(event: Extract<ChatEvent, { type: 'tool.decision' }>): void {
    const { of, call, decision } = event.payload
    this.turns.updateAnswers(of, (answer, own) => {
      if (answer.status === 'stopped' || answer.lastSeenIndex !== undefined) return
      const position = answer.parts.findIndex((p) => p.kind === 'tool' && p.call === call)
      const part = answer.parts[position] as ToolPart | undefined
      if (!part || part.state !== 'awaiting-approval' || part.decided) return
      this.ownPart<ToolPart>(own(), position).decided = decision
    })
  }

  private cancelled(event: Extract<ChatEvent, { type: 'cancelled' }>): void {
    this.turns.updateAnswers(event.payload.of, (answer, own) => {
      const { lastSeenIndex } = event.payload
      // It had already ended: cut only what the reader missed, if the fold still can (late-stop.ts).
      if (isTerminal(answer.status)) return void (cutsFinished(answer, lastSeenIndex) && cutFinished(own(), lastSeenIndex))
      const mine = own()
      mine.status = 'stopped'
      mine.lastSeenIndex = lastSeenIndex
      mine.chunks = mine.chunks.filter((c) => c.index <= lastSeenIndex)
      mine.parts = cutParts(mine.parts, lastSeenIndex)
      for (const part of mine.parts) this.ownedParts.add(part)
    })
  }

  private finished(event: Extract<ChatEvent, { type: 'finished' }>): void {
    this.turns.updateAnswers(event.payload.of, (answer, own, position) => {
      if (isTerminal(answer.status) && answer.status !== 'stopped') return
      if (answer.status === 'stopped' && answer.text) return
      const mine = own()
      mine.status = answer.lastSeenIndex !== undefined || event.payload.reason === 'cancelled' ? 'stopped' : 'done'
      mine.finishReason = event.payload.reason
      mine.usage = addUsage(answer.usage, event.payload.usage)
      this.keepChunkEnds(mine, position)
      compact(mine)
    })
  }

  private failed(event: Extract<ChatEvent, { type: 'a2.failed' }>): void {
    this.turns.updateAnswers(event.payload.of, (answer, own, position) => {
      if (isTerminal(answer.status) && answer.status !== 'stopped') return
      const mine = own()
      mine.status = answer.lastSeenIndex !== undefined ? 'stopped' : 'failed'
      mine.error = event.payload.error.message
      this.keepChunkEnds(mine, position)
      compact(mine)
    })
  }

  /** The tool calls answer `id` shows now (none when it is not in the state). */
  private shownCalls(id: string): AnswerPart[] {
    const [position] = this.turns.answerPositions(id)
    return position === undefined ? [] : (this.turns.turnAt(position) as AnswerTurn).parts.filter((p) => p.kind === 'tool')
  }

  /** The versions that continue answer `id`, and those that continue them (they come after it in the log). */
  private continuersOf(id: string): string[] {
    const [from] = this.turns.answerPositions(id)
    if (from === undefined) return []
    const chain = new Set([id])
    for (let position = from + 1; position < this.turns.length(); position++) {
      const turn = this.turns.turnAt(position)
      if (turn.kind === 'assistant' && turn.continues !== undefined && chain.has(turn.continues)) chain.add(turn.id)
    }
    chain.delete(id)
    return [...chain]
  }

  /** The text answer `id` shows now ('' when it is not in the state). */
  private shownText(id: string): string {
    const [position] = this.turns.answerPositions(id)
    return position === undefined ? '' : answerText(this.turns.turnAt(position) as AnswerTurn)
  }

  /**
   * A step of answer `of` (a chunk, reasoning, tool input, a tool call): applied to the fold's
   * own copy of the answer unless it is a straggler or from a superseded attempt.
   */
  private step(event: Extract<ChatEvent, { payload: { of: string; attempt: number } }>, apply: (mine: AnswerTurn) => void): void {
    this.turns.updateAnswers(event.payload.of, (answer, own) => {
      // Stragglers that land after the cut, or after the end, vanish.
      if (answer.lastSeenIndex !== undefined || isTerminal(answer.status)) return
      // A superseded attempt writes nothing (its appends are fenced); one that got through anyway is dropped.
      if (event.payload.attempt < answer.attempt) return
      // A successor continues from the text its predecessors committed (generate sends it to
      // the model as the answer so far), so every attempt's steps stay, in log order: text a
      // reader has seen never disappears, and a cut at lastSeenIndex keeps exactly what they saw.
      const mine = own()
      mine.status = 'streaming'
      mine.attempt = event.payload.attempt
      apply(mine)
    })
  }

  private addPart(answer: AnswerTurn, part: AnswerPart): void {
    answer.parts.push(part)
    this.ownedParts.add(part)
  }

  /** The fold's own copy of part `position` of an answer it owns. */
  private ownPart<P extends AnswerPart>(answer: AnswerTurn, position: number): P {
    const part = answer.parts[position]
    if (!this.ownedParts.has(part)) {
      const copy: AnswerPart =
        part.kind === 'reasoning' ? { ...part, chunks: part.chunks.slice() } : { ...part, inputChunks: part.inputChunks.slice() }
      answer.parts[position] = copy
      this.ownedParts.add(copy)
    }
    return answer.parts[position] as P
  }

  /** The fold's own copy of tool call `call` of an answer it owns, added (at `index`) if it has none yet. */
  private toolPart(answer: AnswerTurn, { call, tool }: { call: string; tool: string }, index: number): ToolPart {
    const position = answer.parts.findIndex((p) => p.kind === 'tool' && p.call === call)
    if (position >= 0) return this.ownPart<ToolPart>(answer, position)
    const part: ToolPart = { kind: 'tool', index, call, tool, inputChunks: [], inputText: '' }
    this.addPart(answer, part)
    return part
  }

  private add(turn: Turn): void {
    this.dropChunkEnds()
    this.turns.add(turn)
  }

  /** At an answer's end (not cut by a Stop): the newest turn keeps its chunk ends and its parts', so a Stop landing later can still cut it. */
  private keepChunkEnds(answer: AnswerTurn, position: number): void {
    if (answer.status === 'stopped' || (answer.chunks.length === 0 && answer.parts.length === 0) || position !== this.turns.length() - 1) return
    answer.chunkEnds = chunkEndsOf(answer.chunks)
    answer.parts = withPartEnds(answer.parts)
  }

  /** The conversation moves on: the turn that was newest gives its chunk ends up (one answer's at most, ever). */
  private dropChunkEnds(): void {
    const last = this.turns.length() - 1
    const turn = last >= 0 ? this.turns.turnAt(last) : undefined
    if (turn?.kind !== 'assistant' || !turn.chunkEnds) return
    const mine = this.turns.ownAnswer(last)
    delete mine.chunkEnds
    mine.parts = withoutPartEnds(mine.parts)
  }
}

/** At the terminal event the chunks become one string: a finished answer costs one string, however it streamed. */
function compact(answer: AnswerTurn): void {
  answer.text = answer.chunks.map((c) => c.delta).join('')
  answer.chunks = []
  compactParts(answer.parts)
}

/** The text an answer shows: what it continues, then its own, compacted at its end, joined from its chunks before. */
export function answerText(answer: AnswerTurn): string {
  return (answer.prefix ?? '') + (answer.chunks.length > 0 ? answer.chunks.map((c) => c.delta).join('') : answer.text)
}

/** What was written after the reader's Stop, when the answer had finished before it landed (offered, not shown): else ''. */
export function answerRest(answer: AnswerTurn): string {
  return answer.rest ?? ''
}

/** The answer still being written, if any (the newest, when several are): what Stop applies to. */
export function activeAnswer(state: ChatState): AnswerTurn | undefined {
  // The state's index keeps its open answers (turn-index.ts): an open finds it without
  // scanning every turn. A state the index does not know them for is scanned once.
  const index = indexOf(state, slotOf)
  index.open ??= openAnswers(state.turns)
  const newest = index.open.at(-1)
  return newest === undefined ? undefined : (state.turns[newest] as AnswerTurn)
}

/** The positions of the answers not yet terminal, oldest first. */
export function openAnswers(turns: readonly Turn[]): number[] {
  const open: number[] = []
  turns.forEach((turn, position) => {
    if (turn.kind === 'assistant' && !isTerminal(turn.status)) open.push(position)
  })
  return open
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

function assertNever(event: never): never {
  throw new Error(`unhandled event type: ${JSON.stringify((event as { type?: string }).type)}`)
}
