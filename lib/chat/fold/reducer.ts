/**
 * The chat's fold: a pure, exhaustive reducer over the session log, shared by the
 * server (which folds history into model messages) and the browser (which renders it).
 * Adding an event type to the contract breaks the compile here until it is handled.
 */
import type { ChatEvent, FinishReason } from '../contract'
import { indexOf, keepIndex, settle, TurnLayer } from './turn-index'
import { chunkEndsOf, cutFinished, cutsFinished, withoutPartEnds, withPartEnds } from './late-stop'
import { compactParts, cutParts, type AnswerPart, type ReasoningPart, type ToolPart } from './parts'

export type { AnswerPart, ReasoningPart, ToolPart } from './parts'

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
 * A working copy of one fold: the turn list copied once, the index of the state it starts
 * from (kept beside that state, shared by every fold from it: turn-index.ts) with this
 * fold's own turns in a layer on top, and the answers this fold has already copied (and may
 * change in place).
 */
class ChatDraft {
  /** This fold's new turns, after the base's. */
  private readonly added: Turn[] = []
  /** The base's turns this fold copied to change (by position). */
  private readonly replaced = new Map<number, Turn>()
  private changed = false
  private readonly layer: TurnLayer
  /** Answers created or copied by this fold: their objects and arrays are ours to change. */
  private readonly owned = new Set<number>()
  /** Parts created or copied by this fold (of owned answers): ours to change in place. */
  private readonly ownedParts = new WeakSet<AnswerPart>()
  /** Position of the latest branch's last turn; null: no turns; undefined: not known (walk again). */
  private branchEnd: number | null | undefined

  constructor(private readonly base: ChatState) {
    const index = indexOf(base, slotOf)
    this.layer = new TurnLayer(index.layer)
    this.branchEnd = index.branchEnd
  }

  result(): ChatState {
    if (!this.changed) return this.base
    // One copy of the turn list, of its final length, per fold (copying it up front and
    // growing it on the first push was two: ~3 ms at 50k turns).
    const turns = this.base.turns.concat(this.added)
    for (const [position, turn] of this.replaced) turns[position] = turn
    const state = { turns }
    keepIndex(state, { layer: settle(this.layer), branchEnd: this.branchEnd, open: this.openAfter(turns) })
    return state
  }

  /** The open answers' positions in `turns` (this fold's result): the base's, less those this fold ended, plus those it opened. */
  private openAfter(turns: Turn[]): number[] | undefined {
    const before = indexOf(this.base, slotOf).open
    if (before === undefined) return undefined
    const open = new Set(before)
    const changed = [...this.replaced.keys(), ...this.added.map((_, i) => this.base.turns.length + i)]
    for (const position of changed) {
      const turn = turns[position]
      if (turn.kind === 'assistant' && !isTerminal(turn.status)) open.add(position)
      else open.delete(position)
    }
    return [...open].sort((a, b) => a - b)
  }

  apply(event: ChatEvent): void {
    switch (event.type) {
      case 'message': {
        const parent = this.parentOf(event.payload)
        return this.add({ kind: 'user', id: event.id, index: event.index, text: event.payload.text, parent })
      }
      case 'generate': {
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
        }
        return this.add(answer)
      }
      case 'chunk':
        return this.step(event, (mine) => void mine.chunks.push({ index: event.index, delta: event.payload.delta }))
      case 'reasoning':
        return this.step(event, (mine) => {
          const last = mine.parts.at(-1)
          // Reasoning goes on in the part it began, unless text or a tool call came between.
          const goesOn = last?.kind === 'reasoning' && (last.chunks.at(-1)?.index ?? -1) > (mine.chunks.at(-1)?.index ?? -1)
          const part = goesOn ? this.ownPart<ReasoningPart>(mine, mine.parts.length - 1) : undefined
          if (part) part.chunks.push({ index: event.index, delta: event.payload.delta })
          else this.addPart(mine, { kind: 'reasoning', index: event.index, chunks: [{ index: event.index, delta: event.payload.delta }], text: '' })
        })
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
        // No step: what the call did outside the log shows whenever it is known, after a cut or the end too.
        return this.updateAnswers(event.payload.of, (_answer, own) => {
          const { state, input, result, error, settle } = event.payload
          const part = this.toolPart(own(), event.payload, event.index)
          part.stateAt ??= event.index
          part.state = state
          if (input !== undefined) part.input ??= input
          part.result = result
          part.error = error
          part.settle = settle
        })
      case 'cancelled':
        return this.updateAnswers(event.payload.of, (answer, own) => {
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
      case 'finished':
        return this.updateAnswers(event.payload.of, (answer, own, position) => {
          if (isTerminal(answer.status) && answer.status !== 'stopped') return
          if (answer.status === 'stopped' && answer.text) return
          const mine = own()
          mine.status = answer.lastSeenIndex !== undefined || event.payload.reason === 'cancelled' ? 'stopped' : 'done'
          mine.finishReason = event.payload.reason
          mine.usage = event.payload.usage
          this.keepChunkEnds(mine, position)
          compact(mine)
        })
      case 'note.saved':
        return this.updateAnswers(event.payload.of, (_answer, own) => {
          own().notes.push(event.payload.note)
        })
      case 'a2.failed':
        return this.updateAnswers(event.payload.of, (answer, own, position) => {
          if (isTerminal(answer.status) && answer.status !== 'stopped') return
          const mine = own()
          mine.status = answer.lastSeenIndex !== undefined ? 'stopped' : 'failed'
          mine.error = event.payload.error.message
          this.keepChunkEnds(mine, position)
          compact(mine)
        })
      case 'a2.renamed':
        return // the title is the sessions list's; the turns are unchanged
      default:
        return assertNever(event)
    }
  }

  /** The text answer `id` shows now ('' when it is not in the state). */
  private shownText(id: string): string {
    const [position] = this.layer.answerPositions(id)
    return position === undefined ? '' : answerText(this.turnAt(position) as AnswerTurn)
  }

  /**
   * A step of answer `of` (a chunk, reasoning, tool input, a tool call): applied to the fold's
   * own copy of the answer unless it is a straggler or from a superseded attempt.
   */
  private step(event: Extract<ChatEvent, { payload: { of: string; attempt: number } }>, apply: (mine: AnswerTurn) => void): void {
    this.updateAnswers(event.payload.of, (answer, own) => {
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

  private length(): number {
    return this.base.turns.length + this.added.length
  }

  private turnAt(position: number): Turn {
    const base = this.base.turns.length
    return position < base ? (this.replaced.get(position) ?? this.base.turns[position]) : this.added[position - base]
  }

  private put(position: number, turn: Turn): void {
    if (position < this.base.turns.length) this.replaced.set(position, turn)
    else this.added[position - this.base.turns.length] = turn
  }

  private add(turn: Turn): void {
    this.dropChunkEnds()
    const position = this.length()
    this.added.push(turn)
    this.changed = true
    if (turn.kind === 'assistant') this.owned.add(position)
    const slot = slotOf(turn)
    const extendsBranch = this.branchEnd !== undefined && slot === (this.branchEnd === null ? ROOT_SLOT : nextSlot(this.turnAt(this.branchEnd)))
    this.layer.add(turn, position, slot)
    // The common case (a message after the branch's last answer, an answer to the branch's
    // last message) moves the end forward; a new version of an earlier slot means walk again.
    if (extendsBranch) this.branchEnd = this.walkFrom(position)
    else this.branchEnd = undefined
  }

  /** Calls `update` for every answer with this id; `own()` gives the fold's own copy to change. */
  private updateAnswers(id: string, update: (answer: AnswerTurn, own: () => AnswerTurn, position: number) => void): void {
    for (const position of this.layer.answerPositions(id)) {
      update(this.turnAt(position) as AnswerTurn, () => this.ownAnswer(position), position)
    }
  }

  /** The fold's own copy of the answer at `position`, made on first use. */
  private ownAnswer(position: number): AnswerTurn {
    if (!this.owned.has(position)) {
      const answer = this.turnAt(position) as AnswerTurn
      this.put(position, { ...answer, chunks: answer.chunks.slice(), parts: answer.parts.slice(), notes: answer.notes.slice() })
      this.owned.add(position)
      this.changed = true
    }
    return this.turnAt(position) as AnswerTurn
  }

  /** At an answer's end (not cut by a Stop): the newest turn keeps its chunk ends and its parts', so a Stop landing later can still cut it. */
  private keepChunkEnds(answer: AnswerTurn, position: number): void {
    if (answer.status === 'stopped' || (answer.chunks.length === 0 && answer.parts.length === 0) || position !== this.length() - 1) return
    answer.chunkEnds = chunkEndsOf(answer.chunks)
    answer.parts = withPartEnds(answer.parts)
  }

  /** The conversation moves on: the turn that was newest gives its chunk ends up (one answer's at most, ever). */
  private dropChunkEnds(): void {
    const last = this.length() - 1
    const turn = last >= 0 ? this.turnAt(last) : undefined
    if (turn?.kind !== 'assistant' || !turn.chunkEnds) return
    const mine = this.ownAnswer(last)
    delete mine.chunkEnds
    mine.parts = withoutPartEnds(mine.parts)
  }

  /**
   * Where a new message hangs: beside the message it edits (a new version of it), after the
   * answer it names, or — for logs from before `after` existed — after the latest branch's end.
   */
  private parentOf(payload: { edits?: string; after?: string }): string | null {
    if (payload.edits) {
      const edited = this.layer.firstUserOf(payload.edits)
      if (edited !== undefined) return (this.turnAt(edited) as UserTurn).parent
    }
    if (payload.after && this.layer.hasAnswer(payload.after)) return payload.after
    if (this.branchEnd === undefined) this.branchEnd = this.walkFrom(null)
    if (this.branchEnd === null) return null
    const last = this.turnAt(this.branchEnd)
    return last.kind === 'assistant' ? last.id : last.parent
  }

  /** Follows each slot's newest version from `position` (null: from the root) to the branch's end. */
  private walkFrom(position: number | null): number | null {
    let end = position
    // At most one step per turn: ids are unique per session, so a branch cannot loop.
    for (let steps = 0; steps <= this.length(); steps++) {
      const next = this.layer.newestIn(end === null ? ROOT_SLOT : nextSlot(this.turnAt(end)))
      if (next === undefined) break
      end = next
    }
    return end
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

export function isTerminal(status: AnswerStatus): boolean {
  return status === 'done' || status === 'stopped' || status === 'failed'
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
