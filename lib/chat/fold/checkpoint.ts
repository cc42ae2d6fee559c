/**
 * The chat's fold as lib/a2 checkpoints it: the state in pieces of one block of 256 turns
 * (blocks.ts), so that writing a checkpoint serializes only the blocks that changed since the
 * last one and reading one parses a block at a time with the event loop given back between
 * (lib/a2 §12). Whole, at 100k events (2.8 MiB) a read held the loop 12–30 ms plus ~7 ms to
 * index the turns, a write ~18 ms; at 50k user messages (3.8 MiB) 59–66 + ~40 ms and ~28 ms.
 * Piece 0 is a head that lets a process holding no state read only the first screen's blocks.
 */
import type { CheckpointCodec, Fold } from '@/lib/a2'
import type { ChatEvent } from '../contract'
import { BLOCK, blockJson, keepBlock } from './blocks'
import { foldChat, initialChatState, openAnswers, slotOf, type ChatState, type Turn } from './reducer'
import { keepIndex, TurnLayer } from './turn-index'
import { latestBranchEnd } from './first-screen'
import { headOf, pagedChatCheckpoint } from './paged-checkpoint'

/** A piece per block: its turns as a JSON array. The state is its turns and nothing else (a new field breaks the compile here). */
const onlyTurns: Exclude<keyof ChatState, 'turns'> extends never ? true : never = true

export const chatCheckpoint: CheckpointCodec<ChatState> = {
  *encode(state) {
    void onlyTurns
    // Piece 0: what a cold open reads first (paged-checkpoint.ts); then a piece per block.
    yield headOf(state)
    for (let start = 0; start < state.turns.length; start += BLOCK) yield blockJson(state.turns, start)
  },
  decoder() {
    const turns: Turn[] = []
    // The index a fold needs (turn-index.ts), built a block at a time as the blocks are read:
    // built at the first fold instead, it held the loop ~7 ms at 100k events, ~40 ms at 50k messages.
    const layer = new TurnLayer(undefined)
    let head = true
    return {
      add(piece) {
        if (head) return void (head = false) // piece 0 is for a partial read
        const block = JSON.parse(piece) as Turn[]
        const start = turns.length
        keepBlock(start, block, piece)
        for (const turn of block) {
          layer.add(turn, turns.length, slotOf(turn))
          turns.push(turn)
        }
      },
      end() {
        const state: ChatState = { turns }
        keepIndex(state, { layer: layer.count === 0 ? undefined : layer, branchEnd: undefined, open: openAnswers(turns) })
        // Found once here, the branch's end is then kept by every fold from this state (reducer.ts)
        // instead of walked for at each open: ~4.5k steps at 100k events.
        latestBranchEnd(state)
        return state
      },
    }
  },
  partial: pagedChatCheckpoint,
}

/**
 * The fold as the server checkpoints it (lib/a2 keeps its state after every ~1,000 events).
 * Bump the version whenever ChatState's shape, the fold's meaning or the checkpoint's form
 * changes: checkpoints of an older version are then never read.
 */
export const chatFold: Fold<ChatState> = {
  // 2: AnswerTurn.cutAt was renamed lastSeenIndex; 3: stored in blocks (a process on 2 would read them as one JSON text);
  // 4: the newest finished answer keeps its chunkEnds, so a Stop landing after its end cuts it (a chat@3 state has none);
  // 5: answers hold their reasoning and tool calls (AnswerTurn.parts; a chat@4 answer has none);
  // 6: the newest finished answer's parts keep their chunk ends too, so a late Stop cuts them (a chat@5 state has none),
  //    and piece 0 is a head for a partial read (paged-checkpoint.ts; a process on 5 would read it as a block)
  // 7: a tool call that waits for approval keeps its `approval` and the first `decided` (a chat@6 state folded no `tool.decision`)
  name: 'chat@7',
  initial: initialChatState,
  fold: (events, state) => foldChat(events as ChatEvent[], state),
  checkpoint: chatCheckpoint,
}
