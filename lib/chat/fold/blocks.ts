/**
 * A chat state's turns in blocks of 256 at fixed positions, each full block's JSON kept
 * beside its first turn: what a checkpoint of the fold (checkpoint.ts) is made of, so
 * it never serializes the turns a fold did not change.
 *
 * A fold returns the turns it did not change as the very same objects (reducer.ts), so the
 * JSON of a run of turns stays true for as long as the run holds the same objects: a block
 * is reused only while all of its turns are the ones it was made from. A block read from a
 * checkpoint is kept with the text it was parsed from, so the next checkpoint
 * reuses it without serializing it again.
 */
import type { Turn } from './reducer'

/** 256 turns a block: ~80 KiB of JSON at 100k events (~36 blocks); serializing one is ~0.2 ms. */
export const BLOCK = 256

interface Kept {
  start: number
  turns: Turn[]
  /** The block as a JSON array. */
  json: string
}

const kept = new WeakMap<Turn, Kept>()

/** The JSON array of turns[start, start + BLOCK) (fewer at the end). */
export function blockJson(turns: readonly Turn[], start: number): string {
  return (keptAt(turns, start) ?? make(turns, start)).json
}

/** Keeps a block parsed from `json` (a checkpoint's piece) as the block at `start`; a partial one is not kept. */
export function keepBlock(start: number, turns: Turn[], json: string): void {
  if (start % BLOCK === 0 && turns.length === BLOCK) kept.set(turns[0], { start, turns, json })
}

function keptAt(turns: readonly Turn[], start: number): Kept | undefined {
  const end = Math.min(start + BLOCK, turns.length)
  const block = kept.get(turns[start])
  if (!block || block.start !== start || block.turns.length !== end - start) return undefined
  for (let i = 0; i < block.turns.length; i++) if (block.turns[i] !== turns[start + i]) return undefined
  return block
}

function make(turns: readonly Turn[], start: number): Kept {
  const block = turns.slice(start, start + BLOCK)
  const made = { start, turns: block, json: JSON.stringify(block) }
  // The last block still grows: kept only once full.
  if (block.length === BLOCK) kept.set(block[0], made)
  return made
}
