/**
 * Versions: regenerate and edit never destroy. Every answer to one message is a version of
 * that answer; every message with the same parent (an edit, or a message sent after an older
 * version of the answer before it) is a version of that message. The fold keeps them all
 * (ChatState.turns); this module picks the branch on screen — each slot's chosen version, or
 * its newest — as ChatGPT's and Claude's ‹ 1/2 › do. Pure: the choice is the caller's state.
 */
import { nextSlot, ROOT_SLOT, slotOf, type ChatState, type Turn } from './reducer'

/**
 * The versions a reader chose, by slot. `of` is how many versions the slot had then: a newer
 * version (a regenerate or edit since) shows by itself, as the one just asked for.
 */
export type Selection = Readonly<Record<string, { id: string; of: number }>>

export interface VisibleTurn {
  turn: Turn
  slot: string
  /** Every version's id in this slot, oldest first. */
  versions: string[]
  /** Which of them this is (0-based). */
  version: number
}

/**
 * The branch on screen, from the first message, or, when the state holds a window of the chat
 * (first-screen.ts), from its first turn's slot: a window's first turn in log order sits at its
 * top slot (a turn's ancestors were all written before it).
 */
export function visibleTurns(state: ChatState, selection: Selection = {}): VisibleTurn[] {
  const slots = new Map<string, Turn[]>()
  for (const turn of state.turns) {
    const slot = slotOf(turn)
    const list = slots.get(slot)
    if (list) list.push(turn)
    else slots.set(slot, [turn])
  }
  const visible: VisibleTurn[] = []
  const top = slots.has(ROOT_SLOT) || state.turns.length === 0 ? ROOT_SLOT : slotOf(state.turns[0])
  for (let slot = top, versions = slots.get(slot); versions; versions = slots.get(slot)) {
    const chosen = selection[slot]
    const stillCurrent = chosen && chosen.of === versions.length
    const at = stillCurrent ? versions.findIndex((t) => t.id === chosen.id) : -1
    const version = at === -1 ? versions.length - 1 : at
    const turn = versions[version]
    visible.push({ turn, slot, versions: versions.map((t) => t.id), version })
    slot = nextSlot(turn)
  }
  return visible
}

/** The conversation that leads to `turnId` (inclusive), root first: the branch it lives on. */
export function pathTo(state: ChatState, turnId: string): Turn[] {
  const byId = new Map(state.turns.map((t) => [t.id, t]))
  const path: Turn[] = []
  for (let turn = byId.get(turnId); turn;) {
    path.unshift(turn)
    const up = turn.kind === 'user' ? turn.parent : turn.for
    turn = up === null ? undefined : byId.get(up)
  }
  return path
}
