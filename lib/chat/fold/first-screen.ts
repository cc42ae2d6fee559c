/**
 * What opening a chat sends, and each page of older turns after it: a window of the
 * conversation, never the whole. A chat of 2,500 short turns answered its whole fold,
 * 6.3 MB in 689 ms, before the browser showed the newest 60 of them.
 *
 * A window is a run of turns on one branch, each with the versions of its slot (so ‹ 1/2 ›
 * works on any turn shown; at most MAX_VERSIONS of them), in log order. Windows of one chat hold disjoint slots, so the
 * browser joins them by putting an older one in front (versions.ts needs only each slot's
 * versions in log order, and the walk from slot to slot). `older` is the cursor: the id of
 * the window's top turn, from which the next page walks up by parent links. Walking up by
 * the turn's own `parent`/`for` is the path above that turn whichever versions the reader
 * picked below it, so a cursor stays true however the chat grows meanwhile.
 *
 * A non-newest version's own continuation (the branch below an older answer) is another
 * window: `continues` names the versions in a window whose next turns it does not hold, and
 * `below(id)` is the page under one of them.
 */
import { activeAnswer, nextSlot, ROOT_SLOT, slotOf, type ChatState, type Turn } from './reducer'
import { indexOf } from './turn-index'

/** Turns the first screen shows (components/chat/messages.tsx renders the newest 60). */
export const FIRST_SCREEN_TURNS = 60
/** Turns a page of older ones adds ("Show earlier messages" adds 60). */
export const PAGE_TURNS = 60

export interface TurnsWindow {
  /** The window's turns with every version of their slots, in log order. */
  turns: Turn[]
  /** The id of the top turn, to ask for the page above it; null when the window starts at the first message. */
  older: string | null
  /** Ids of turns in the window with turns below them that the window does not hold (`below(id)` brings them). */
  continues: string[]
}

/** Opening a chat: its first window, folded into a state, and the last index folded (the tail starts after it). */
export interface FirstScreen extends Pick<TurnsWindow, 'older' | 'continues'> {
  state: ChatState
  lastSeenIndex: number
}

/**
 * At most this many versions of one slot go with a window: the newest, and the one on the
 * branch. A log of 50k bare messages (no answers) is one slot of 50k versions, 3.9 MiB of
 * first screen before the cap.
 */
export const MAX_VERSIONS = 32

/**
 * The state's own index (turn-index.ts: kept beside each fold's state and shared by the folds
 * from it) answers by id and by slot. Building a map of every turn at each open instead cost
 * 1.9 MiB of heap and most of a 22 ms open at 100k events (9k turns).
 */
function lookup(state: ChatState) {
  const { layer } = indexOf(state, slotOf)
  return {
    byId(id: string): Turn | undefined {
      const position = layer?.firstUserOf(id) ?? layer?.answerPositions(id)[0]
      return position === undefined ? undefined : state.turns[position]
    },
    /** Where `turn` sits in the state's turn list (-1: not there). */
    positionOf(turn: Turn): number {
      const positions = turn.kind === 'user' ? [layer?.firstUserOf(turn.id)] : (layer?.answerPositions(turn.id) ?? [])
      return positions.find((p) => p !== undefined && state.turns[p] === turn) ?? -1
    },
    newestIn(slot: string): Turn | undefined {
      const position = layer?.newestIn(slot)
      return position === undefined ? undefined : state.turns[position]
    },
  }
}

/**
 * The last turn of the latest branch (each slot's newest version from the first message down).
 * The fold keeps where it is in the state's index; a state whose index does not know it (one
 * read from a checkpoint) is walked from the first message once, and the index keeps it.
 */
export function latestBranchEnd(state: ChatState): Turn | undefined {
  const index = indexOf(state, slotOf)
  if (index.branchEnd === undefined) {
    const { newestIn, positionOf } = lookup(state)
    let end: Turn | undefined
    // At most one step per turn: ids are unique per session, so a branch cannot loop.
    for (let turn = newestIn(ROOT_SLOT), steps = 0; turn && steps <= state.turns.length; turn = newestIn(nextSlot(turn)), steps++) end = turn
    index.branchEnd = end ? positionOf(end) : null
  }
  return index.branchEnd === null ? undefined : state.turns[index.branchEnd]
}

/**
 * The newest `count` turns of the latest branch, walked up from its end by parent links, and
 * whether turns lie above them: what an open reads is these turns, not the branch above them
 * (walking down from the first message was ~520 KiB of heap per open at 100k events).
 */
export function newestOfBranch(state: ChatState, count: number): { turns: Turn[]; more: boolean } {
  const { byId } = lookup(state)
  const turns: Turn[] = []
  let turn = latestBranchEnd(state)
  for (; turn && turns.length < count; turn = parentOf(byId, turn)) turns.push(turn)
  return { turns: turns.reverse(), more: turn !== undefined }
}

/** The newest `count` turns of the latest branch (and the open answer, wherever it is), with their versions. */
export function firstScreen(state: ChatState, count = FIRST_SCREEN_TURNS): TurnsWindow {
  const newest = newestOfBranch(state, count)
  const screen = windowOf(state, newest.turns, newest.more ? newest.turns[0].id : null)
  // The open answer (what Stop names) and the log's newest turn (the one the fold keeps chunk
  // ends for, so a late Stop cuts alike here and in the browser) come too, wherever they hang:
  // after the branch's turns, so the first turn is still the top and the newest still last.
  const held = new Set(screen.turns.map(slotOf))
  const extra = new Set([activeAnswer(state), state.turns.at(-1)].flatMap((turn) => (turn && !held.has(slotOf(turn)) ? [slotOf(turn)] : [])))
  if (extra.size === 0) return screen
  const turns = [...screen.turns, ...versionsOf(state, [], extra, firstPossible(state, [activeAnswer(state), state.turns.at(-1)]))]
  return { turns, older: screen.older, continues: continuing(state, turns) }
}

/** The `count` turns above turn `id` on its path, with their versions; undefined when the chat has no such turn. */
export function pageAbove(state: ChatState, id: string, count = PAGE_TURNS): TurnsWindow | undefined {
  const { byId } = lookup(state)
  const from = byId(id)
  if (!from) return undefined
  const above: Turn[] = []
  let turn = parentOf(byId, from)
  for (; turn && above.length < count; turn = parentOf(byId, turn)) above.push(turn)
  above.reverse()
  return windowOf(state, above, turn && above.length > 0 ? above[0].id : null)
}

/** The `count` turns below turn `id`, following each slot's newest version, with their versions; undefined: no such turn. */
export function pageBelow(state: ChatState, id: string, count = PAGE_TURNS): TurnsWindow | undefined {
  const { byId, newestIn } = lookup(state)
  const from = byId(id)
  if (!from) return undefined
  const below: Turn[] = []
  for (let turn = newestIn(nextSlot(from)); turn && below.length < count; turn = newestIn(nextSlot(turn))) below.push(turn)
  return windowOf(state, below, null)
}

/** The turn above `turn` on its path: a message's parent answer, an answer's message. */
function parentOf(byId: (id: string) => Turn | undefined, turn: Turn): Turn | undefined {
  const up = turn.kind === 'user' ? turn.parent : turn.for
  return up === null ? undefined : byId(up)
}

function windowOf(state: ChatState, shown: Turn[], older: string | null): TurnsWindow {
  const slots = new Set(shown.map(slotOf))
  const turns = versionsOf(state, shown, slots, firstPossible(state, shown.slice(0, 1)))
  return { turns, older, continues: continuing(state, turns) }
}

/**
 * Where the versions of these turns' slots can start in the turn list: every version of a
 * slot was written after the turn above it (a turn comes after its parent), so a scan for them
 * starts at the highest of those parents, not at the chat's first turn.
 */
function firstPossible(state: ChatState, turns: Array<Turn | undefined>): number {
  const { byId, positionOf } = lookup(state)
  let from = state.turns.length
  for (const turn of turns) {
    if (!turn) continue
    const above = parentOf(byId, turn)
    from = Math.min(from, above ? Math.max(0, positionOf(above)) : 0)
  }
  return from
}

/** Every turn in `slots`, in log order, but at most MAX_VERSIONS a slot: the newest, and the ones `shown`. */
function versionsOf(state: ChatState, shown: Turn[], slots: Set<string>, from = 0): Turn[] {
  const kept = new Map<string, number>()
  const turns: Turn[] = []
  const mustKeep = new Set(shown)
  let unseen = mustKeep.size
  let full = 0
  // Newest first, until every slot has its MAX_VERSIONS and every turn shown is met: nothing
  // older would be kept (50k bare messages are one slot: 32 steps, not 50k).
  for (let i = state.turns.length - 1; i >= from && (full < slots.size || unseen > 0); i--) {
    const turn = state.turns[i]
    const slot = slotOf(turn)
    if (!slots.has(slot)) continue
    const count = kept.get(slot) ?? 0
    const shownHere = mustKeep.has(turn)
    if (shownHere) unseen--
    if (count >= MAX_VERSIONS && !shownHere) continue
    kept.set(slot, count + 1)
    if (count + 1 === MAX_VERSIONS) full++
    turns.push(turn)
  }
  return turns.reverse()
}

/** The turns with turns below them in the chat but not among `turns`. */
function continuing(state: ChatState, turns: Turn[]): string[] {
  const { newestIn } = lookup(state)
  const slots = new Set(turns.map(slotOf))
  return turns.filter((turn) => !slots.has(nextSlot(turn)) && newestIn(nextSlot(turn)) !== undefined).map((turn) => turn.id)
}

/**
 * A window joined to the turns a browser holds: its slots that are already held are left out
 * (a page asked for twice). A page above goes in front (its first turn is then the top the
 * branch on screen starts from, versions.ts); a page below goes after the first turn, so the
 * top and the newest turn (the fold's last) stay where they are. The other turns stay the very
 * same objects.
 */
export function joinWindow(state: ChatState, window: Pick<TurnsWindow, 'turns'>, where: 'above' | 'below'): ChatState {
  const held = new Set(state.turns.map(slotOf))
  const added = window.turns.filter((turn) => !held.has(slotOf(turn)))
  if (added.length === 0) return state
  if (where === 'above' || state.turns.length === 0) return { turns: [...added, ...state.turns] }
  return { turns: [state.turns[0], ...added, ...state.turns.slice(1)] }
}
