/**
 * The turn list of one fold in progress (reducer.ts's ChatDraft): the base state's turns copied
 * at most once, the index of the state it starts from (kept beside that state, shared by every
 * fold from it: turn-index.ts) with this fold's own turns in a layer on top, the answers this
 * fold has already copied (and may change in place), and where the latest branch ends.
 */
import { indexOf, keepIndex, settle, TurnLayer } from './turn-index'
import { isTerminal, nextSlot, ROOT_SLOT, slotOf, type AnswerTurn, type ChatState, type Turn, type UserTurn } from './turns'

export class DraftTurns {
  /** This fold's new turns, after the base's. */
  private readonly added: Turn[] = []
  /** The base's turns this fold copied to change (by position). */
  private readonly replaced = new Map<number, Turn>()
  private changed = false
  private readonly layer: TurnLayer
  /** Answers created or copied by this fold: their objects and arrays are ours to change. */
  private readonly owned = new Set<number>()
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

  length(): number {
    return this.base.turns.length + this.added.length
  }

  turnAt(position: number): Turn {
    const base = this.base.turns.length
    return position < base ? (this.replaced.get(position) ?? this.base.turns[position]) : this.added[position - base]
  }

  private put(position: number, turn: Turn): void {
    if (position < this.base.turns.length) this.replaced.set(position, turn)
    else this.added[position - this.base.turns.length] = turn
  }

  add(turn: Turn): void {
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

  /** Where the answers with this id sit. */
  answerPositions(id: string): readonly number[] {
    return this.layer.answerPositions(id)
  }

  /** Calls `update` for every answer with this id; `own()` gives the fold's own copy to change. */
  updateAnswers(id: string, update: (answer: AnswerTurn, own: () => AnswerTurn, position: number) => void): void {
    for (const position of this.layer.answerPositions(id)) {
      update(this.turnAt(position) as AnswerTurn, () => this.ownAnswer(position), position)
    }
  }

  /** The fold's own copy of the answer at `position`, made on first use. */
  ownAnswer(position: number): AnswerTurn {
    if (!this.owned.has(position)) {
      const answer = this.turnAt(position) as AnswerTurn
      this.put(position, { ...answer, chunks: answer.chunks.slice(), parts: answer.parts.slice(), notes: answer.notes.slice() })
      this.owned.add(position)
      this.changed = true
    }
    return this.turnAt(position) as AnswerTurn
  }

  /**
   * Where a new message hangs: beside the message it edits (a new version of it), after the
   * answer it names, or — for logs from before `after` existed — after the latest branch's end.
   */
  /** The files a new message carries: its own, or (an edit naming none) those of the message it edits. */
  filesOf(payload: { edits?: string; files?: UserTurn['files'] }): UserTurn['files'] {
    if (payload.files !== undefined || !payload.edits) return payload.files
    const edited = this.layer.firstUserOf(payload.edits)
    return edited === undefined ? undefined : (this.turnAt(edited) as UserTurn).files
  }

  parentOf(payload: { edits?: string; after?: string }): string | null {
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
