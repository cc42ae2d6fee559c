/**
 * A successor attempt sends the committed text to the model as the answer so far and asks it
 * to continue. Chat-completions servers have no prefill: a model that ignores the instruction
 * starts the answer over, and appending what it streams would show the reader, below the text
 * they already read, the same text again. This filter sits between the model's text deltas and
 * the chunk writer and holds the stream's opening while it could still be a restatement:
 *
 * - the model restated the whole answer so far: that part is dropped, the rest is written, and
 *   the reader sees one answer going on from where it stopped;
 * - the model diverged within the first RESTART_MIN_CHARS: it was continuing (a continuation
 *   may begin with the same few characters by chance), and everything held is written;
 * - the model diverged later, after repeating the opening in full words: it started over and
 *   said something else. Dropping the repeat would splice two answers mid-sentence, so the new
 *   answer is written whole after a paragraph break: the reader keeps what they read and sees
 *   where the new one begins;
 * - the stream ended while still repeating a prefix: nothing new was said, nothing is written.
 */

/** 40 characters, about 8 English words: a continuation that repeats that much of the answer's opening is a restart. */
export const RESTART_MIN_CHARS = 40

export interface RestatementFilter {
  add(delta: string): void
  /** The model stream ended: whatever is held is resolved (dropped, when it only repeated). */
  end(): void
}

export function restatementFilter(soFar: string, write: (delta: string) => void): RestatementFilter {
  let held = ''
  let passing = soFar === ''

  const release = (text: string) => {
    passing = true
    held = ''
    if (text) write(text)
  }

  return {
    add(delta) {
      if (passing) return write(delta)
      held += delta
      if (held.length >= soFar.length && held.startsWith(soFar)) return release(held.slice(soFar.length))
      if (soFar.startsWith(held)) return // still the answer so far, word for word: wait
      const common = commonPrefixLength(soFar, held)
      release(common >= RESTART_MIN_CHARS ? `\n\n${held}` : held)
    },
    end() {
      held = ''
      passing = true
    },
  }
}

function commonPrefixLength(a: string, b: string): number {
  let i = 0
  while (i < a.length && i < b.length && a.charCodeAt(i) === b.charCodeAt(i)) i++
  return i
}
