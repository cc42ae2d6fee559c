import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { RESTART_MIN_CHARS, restatementFilter } from './restatement'

/** Feeds `text` to a filter in the given pieces (cut points anywhere, surrogate pairs included) and returns what it wrote. */
function run(soFar: string, text: string, cuts: number[]): string {
  let out = ''
  const filter = restatementFilter(soFar, (delta) => (out += delta))
  const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b)
  let from = 0
  for (const point of [...points, text.length]) {
    if (point > from) filter.add(text.slice(from, point))
    from = Math.max(from, point)
  }
  filter.end()
  return out
}

// Every class of hostile text: lone surrogates, NUL and control characters, astral characters.
const text = fc.string({ unit: 'binary', maxLength: 120 })
const cuts = fc.array(fc.nat(), { maxLength: 12 })
const commonPrefix = (a: string, b: string) => {
  let i = 0
  while (i < a.length && i < b.length && a[i] === b[i]) i++
  return i
}

describe('restatementFilter', () => {
  it('a model that starts over: the answer so far is dropped, the reader gets only the rest', () => {
    fc.assert(
      fc.property(
        text.filter((s) => s.length > 0),
        text,
        cuts,
        (soFar, rest, at) => {
          expect(run(soFar, soFar + rest, at)).toBe(rest)
        },
      ),
      { seed: 2912, numRuns: 500 },
    )
  })

  it('a model that continues: every character it said is written, in order', () => {
    fc.assert(
      fc.property(text, text, cuts, (soFar, rest, at) => {
        fc.pre(commonPrefix(soFar, rest) < RESTART_MIN_CHARS && !soFar.startsWith(rest))
        expect(run(soFar, rest, at)).toBe(rest)
      }),
      { seed: 2913, numRuns: 500 },
    )
  })

  it('a model that starts over and then says something else: its new answer is written whole after a paragraph break', () => {
    const opening = fc.string({ minLength: RESTART_MIN_CHARS, maxLength: 80 })
    fc.assert(
      fc.property(opening, text, text, cuts, (shared, endingSeen, newEnding, at) => {
        fc.pre(endingSeen.length > 0 && newEnding.length > 0 && endingSeen[0] !== newEnding[0])
        expect(run(shared + endingSeen, shared + newEnding, at)).toBe(`\n\n${shared}${newEnding}`)
      }),
      { seed: 2914, numRuns: 300 },
    )
  })

  it('a stream that ends while still repeating the answer so far writes nothing', () => {
    expect(run('The lease is a promise with an expiry date.', 'The lease is a prom', [3, 9])).toBe('')
  })

  it('a first attempt (no answer so far) passes everything through at once', () => {
    const written: string[] = []
    const filter = restatementFilter('', (delta) => written.push(delta))
    filter.add('a')
    filter.add('\u0000\ud800')
    expect(written).toEqual(['a', '\u0000\ud800'])
  })
})
