/**
 * The chat's checkpoint read in part: what a process holding no state of a chat (after a
 * restart, on another instance, once its state was evicted) reads to open it. The whole
 * newest checkpoint was 98 ms and 11 MiB of heap at 100k events (a fresh chat: 9 ms, 0.2 MiB),
 * 300 ms and 15.7 MiB at 50k user messages; the first screen is one or two blocks of it.
 *
 * Piece 0 of a checkpoint is its head (written by checkpoint.ts from the whole state): which
 * blocks hold the turns the first screen shows, the turn above its top, each shown turn's
 * next turn and every open answer; where the branch ends; and which slots the blocks hold
 * whole for the screen. The partial state is those blocks' turns, in log order (a sub-list of
 * the whole: the fold and first-screen.ts only ever compare positions, never count them).
 *
 * It is used only when folding the events since the checkpoint onto it gives the first screen
 * the whole fold gives: every turn an event names is in it, every turn the events add hangs
 * in a slot the blocks hold whole (or under a turn the events added), and the screen it shows
 * lies in such slots with its walk up found. Else the whole checkpoint is read (lib/a2 §12).
 */
import type { PartialCheckpoint } from '@/lib/a2'
import type { ChatEvent } from '../contract'
import { BLOCK } from './blocks'
import { firstScreen, FIRST_SCREEN_TURNS, latestBranchEnd, newestOfBranch } from './first-screen'
import { activeAnswer, nextSlot, openAnswers, slotOf, type ChatState, type Turn } from './reducer'
import { indexOf, keepIndex, TurnLayer } from './turn-index'

/** Piece 0 of a checkpoint. Positions are in the whole state's turn list. */
interface Head {
  /** Blocks (0, 1, …: piece n + 1) a cold open reads. */
  blocks: number[]
  /** The latest branch's last turn; null: no turns. */
  branchEnd: number | null
  /** The slot of the first screen's top turn: the latest branch runs through its newest version. */
  topSlot: string | null
  /** Slots whose versions the first screen shows and the blocks hold (with the empty slots under shown turns). */
  screenSlots: string[]
  /** Of those, the slots from the top down on the latest branch (and the empty ones under shown turns): a new turn there leaves the branch above the top alone. */
  branchSlots: string[]
}

/** What a partial state was read with: the blocks' turns, then the turns folded on. */
interface PartOf {
  loaded: number
  topSlot: string | null
  screenSlots: Set<string>
  branchSlots: Set<string>
}

const parts = new WeakMap<ChatState, PartOf>()

/** Piece 0 for the whole `state`: what a cold open of it reads. */
export function headOf(state: ChatState): string {
  const { layer } = indexOf(state, slotOf)
  const positionOf = (turn: Turn): number => {
    const positions = turn.kind === 'user' ? [layer?.firstUserOf(turn.id)] : (layer?.answerPositions(turn.id) ?? [])
    return positions.find((p) => p !== undefined && state.turns[p] === turn) ?? -1
  }
  const branch = newestOfBranch(state, FIRST_SCREEN_TURNS).turns
  const screen = firstScreen(state).turns
  const end = latestBranchEnd(state)
  activeAnswer(state) // fills the index's open answers in
  const wanted = new Set<number>([...screen.map(positionOf), state.turns.length - 1, ...(indexOf(state, slotOf).open ?? [])])
  if (end) wanted.add(positionOf(end))
  const up = branch[0] && above(branch[0])
  const top = up === undefined ? undefined : up.kind === 'user' ? layer?.firstUserOf(up.id) : layer?.answerPositions(up.id)[0]
  if (top !== undefined) wanted.add(top)
  const empty: string[] = []
  for (const turn of screen) {
    const next = layer?.newestIn(nextSlot(turn))
    if (next === undefined) empty.push(nextSlot(turn))
    else wanted.add(next)
  }
  // A shown turn the index cannot place (never seen: ids are unique per session) would be a
  // screen without it: every block is named instead.
  const unplaced = screen.some((turn) => positionOf(turn) < 0)
  const blocks = unplaced ? state.turns.map((_, p) => p) : [...wanted].filter((p) => p >= 0)
  const head: Head = {
    blocks: [...new Set(blocks.map((p) => Math.floor(p / BLOCK)))].sort((a, b) => a - b),
    branchEnd: end ? positionOf(end) : null,
    topSlot: branch[0] ? slotOf(branch[0]) : null,
    screenSlots: [...new Set([...screen.map(slotOf), ...empty])],
    branchSlots: [...new Set([...branch.map(slotOf), ...empty])],
  }
  return JSON.stringify(head)
}

/** The id of the turn above `turn` on its path, as a stand-in for it (only its id and kind are read). */
function above(turn: Turn): Pick<Turn, 'id' | 'kind'> | undefined {
  if (turn.kind === 'user') return turn.parent === null ? undefined : { id: turn.parent, kind: 'assistant' }
  return { id: turn.for, kind: 'user' }
}

export const pagedChatCheckpoint: PartialCheckpoint<ChatState> = {
  needs: (head) => (JSON.parse(head) as Head).blocks.map((block) => block + 1),
  decode(text, pieces) {
    const head = JSON.parse(text) as Head
    const turns: Turn[] = []
    const layer = new TurnLayer(undefined)
    let branchEnd: number | null = null
    pieces.forEach((piece, i) => {
      const start = head.blocks[i] * BLOCK
      if (head.branchEnd !== null && head.branchEnd >= start && head.branchEnd < start + BLOCK) branchEnd = turns.length + head.branchEnd - start
      for (const turn of JSON.parse(piece) as Turn[]) {
        layer.add(turn, turns.length, slotOf(turn))
        turns.push(turn)
      }
    })
    const state: ChatState = { turns }
    keepIndex(state, { layer: layer.count === 0 ? undefined : layer, branchEnd, open: openAnswers(turns) })
    parts.set(state, { loaded: turns.length, topSlot: head.topSlot, screenSlots: new Set(head.screenSlots), branchSlots: new Set(head.branchSlots) })
    return state
  },
  accepts(start, events, folded) {
    const part = parts.get(start)
    if (!part) return false
    const added = new Set<string>()
    if (!namesOnlyHeld(start, events as readonly ChatEvent[], added)) return false
    // The slot's turn above: a slot is `u:<answer id>` or `a:<message id>` (reducer.ts slotOf).
    const underAdded = (slot: string) => added.has(slot.slice(2))
    for (let p = part.loaded; p < folded.turns.length; p++) {
      const slot = slotOf(folded.turns[p])
      if (!part.branchSlots.has(slot) && !underAdded(slot)) return false
    }
    if (!branchEndFound(folded, part)) return false
    if (!walkUpFound(folded)) return false
    return firstScreen(folded).turns.every((turn) => part.screenSlots.has(slotOf(turn)) || underAdded(slotOf(turn)))
  },
}

/** Every turn the events name is in `start` or added by an earlier one of them (collected in `added`). */
function namesOnlyHeld(start: ChatState, events: readonly ChatEvent[], added: Set<string>): boolean {
  const { layer } = indexOf(start, slotOf)
  const held = (id: string) => added.has(id) || layer?.firstUserOf(id) !== undefined || (layer?.hasAnswer(id) ?? false)
  for (const event of events) {
    switch (event.type) {
      case 'message': {
        const { edits, after } = event.payload
        // Without either, the message hangs at the branch's end as the whole fold walks it from the first message.
        if ((edits === undefined && after === undefined) || (edits !== undefined && !held(edits)) || (after !== undefined && !held(after)))
          return false
        added.add(event.id)
        break
      }
      case 'generate':
        if (!held(event.payload.for) || (event.payload.continues !== undefined && !held(event.payload.continues))) return false
        added.add(event.id)
        break
      case 'a2.renamed':
        break
      default:
        if (!held(event.payload.of)) return false
    }
  }
  return true
}

/**
 * The branch's end in the folded part. The fold keeps it while turns extend the branch; after
 * a new version it walks from the first message, which the part may not hold: the branch runs
 * through the top's slot unchanged above it (no turn was added there), so walk from there.
 */
function branchEndFound(folded: ChatState, part: PartOf): boolean {
  const index = indexOf(folded, slotOf)
  if (index.branchEnd !== undefined) return true
  if (part.topSlot === null || !index.layer) return false
  let end = index.layer.newestIn(part.topSlot)
  if (end === undefined) return false
  // At most one step per turn: ids are unique per session, so a branch cannot loop.
  for (let steps = 0, next = index.layer.newestIn(nextSlot(folded.turns[end])); next !== undefined && steps <= folded.turns.length; steps++) {
    end = next
    next = index.layer.newestIn(nextSlot(folded.turns[end]))
  }
  index.branchEnd = end
  return true
}

/** The first screen's walk up from the branch's end, and the turn above its top, are all in the part. */
function walkUpFound(folded: ChatState): boolean {
  const { layer } = indexOf(folded, slotOf)
  let turn = latestBranchEnd(folded)
  for (let steps = 0; turn && steps < FIRST_SCREEN_TURNS; steps++) {
    const up = above(turn)
    if (!up) return true
    const position = up.kind === 'user' ? layer?.firstUserOf(up.id) : layer?.answerPositions(up.id)[0]
    if (position === undefined) return false
    turn = folded.turns[position]
  }
  return true
}
