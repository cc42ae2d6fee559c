/**
 * Where each answer id, first user message and slot sits in a ChatState's turn list, kept
 * beside the state it describes and shared by every fold that starts from it.
 *
 * A fold starts from a checkpoint's state (the same object for every answer and page open
 * until the next checkpoint) and adds a few turns. Indexing the whole turn list again at
 * every fold cost 7 ms at 100k events (9k turns) and 40 ms at 50k user messages, per answer
 * and per page open, on the caller's event loop. Instead, a state's index is layers: the
 * turns its fold added on top of the index of the state it started from, merged into the
 * layer below whenever a layer grows to half of it, so a lookup visits O(log turns) maps
 * and a fold costs its own turns (amortized), not the session's.
 *
 * A layer is never changed once its fold returns; states are read-only, so an index built
 * for a state stays true for as long as the state lives (a WeakMap: it goes with the state).
 */
/** What the index needs of a turn (reducer.ts's Turn; structural, so the two modules do not import each other). */
export interface IndexedTurn {
  kind: 'user' | 'assistant'
  id: string
}

/** One fold's turns: positions in the turn list by answer id, first user message id, and slot. */
export class TurnLayer {
  readonly answers = new Map<string, number[]>()
  readonly firstUser = new Map<string, number>()
  readonly newestBySlot = new Map<string, number>()
  /** Turns indexed in this layer. */
  count = 0

  constructor(readonly below: TurnLayer | undefined) {}

  add(turn: IndexedTurn, position: number, slot: string): void {
    this.count++
    if (turn.kind === 'assistant') {
      const positions = this.answers.get(turn.id)
      if (positions) positions.push(position)
      else this.answers.set(turn.id, [position])
    } else if (this.firstUserOf(turn.id) === undefined) this.firstUser.set(turn.id, position)
    this.newestBySlot.set(slot, position)
  }

  /** Every position of an answer with this id, oldest first. */
  answerPositions(id: string): number[] {
    const own = this.answers.get(id)
    const older = this.below?.answerPositions(id) ?? NONE
    if (!own) return older
    return older.length === 0 ? own : [...older, ...own]
  }

  hasAnswer(id: string): boolean {
    return this.answers.has(id) || (this.below?.hasAnswer(id) ?? false)
  }

  firstUserOf(id: string): number | undefined {
    return this.below?.firstUserOf(id) ?? this.firstUser.get(id)
  }

  newestIn(slot: string): number | undefined {
    return this.newestBySlot.get(slot) ?? this.below?.newestIn(slot)
  }
}

const NONE: number[] = []

/**
 * A fold's layer as the finished index of its state: merged into the layers below while it
 * is at least half their size (each merge copies both, so a turn is copied O(log turns) times).
 */
export function settle(layer: TurnLayer): TurnLayer | undefined {
  if (layer.count === 0) return layer.below
  let top = layer
  while (top.below && top.count * 2 >= top.below.count) top = merge(top.below, top)
  return top
}

/** A new layer holding `lower` then `upper` (neither is changed: other states' indexes share them). */
function merge(lower: TurnLayer, upper: TurnLayer): TurnLayer {
  const merged = new TurnLayer(lower.below)
  merged.count = lower.count + upper.count
  for (const [id, positions] of lower.answers) merged.answers.set(id, positions.slice())
  for (const [id, positions] of upper.answers) {
    const existing = merged.answers.get(id)
    if (existing) existing.push(...positions)
    else merged.answers.set(id, positions.slice())
  }
  for (const [id, position] of lower.firstUser) merged.firstUser.set(id, position)
  for (const [id, position] of upper.firstUser) if (!merged.firstUser.has(id)) merged.firstUser.set(id, position)
  for (const [slot, position] of lower.newestBySlot) merged.newestBySlot.set(slot, position)
  for (const [slot, position] of upper.newestBySlot) merged.newestBySlot.set(slot, position)
  return merged
}

/**
 * A state's index, the position of its latest branch's last turn (null: no turns; undefined:
 * not known) and the positions of its open answers, oldest first (undefined: not known). The
 * two that may be unknown are filled in by the first reader that needs them (they follow from
 * the turns, so filling them in changes nothing a reader sees): the first screen starts from
 * both, and walking the branch from the first message or scanning every turn for them was most
 * of an open's heap at 100k events (~9k turns: ~520 KiB, against ~90 for the fold).
 */
export interface StateIndex {
  layer: TurnLayer | undefined
  branchEnd: number | null | undefined
  open: readonly number[] | undefined
}

const indexes = new WeakMap<object, StateIndex>()

/** The index kept for this state, or one built from its turns (once per state: a checkpoint read from JSON). */
export function indexOf<T extends IndexedTurn>(state: { turns: readonly T[] }, slotOf: (turn: T) => string): StateIndex {
  const known = indexes.get(state)
  if (known) return known
  const layer = new TurnLayer(undefined)
  state.turns.forEach((turn, position) => layer.add(turn, position, slotOf(turn)))
  // An empty list's branch and open answers are known: none.
  const empty = state.turns.length === 0
  const built = { layer: layer.count === 0 ? undefined : layer, branchEnd: empty ? null : undefined, open: empty ? [] : undefined }
  indexes.set(state, built)
  return built
}

/** Keeps `index` as the index of `state` (a fold's result). */
export function keepIndex(state: object, index: StateIndex): void {
  indexes.set(state, index)
}
