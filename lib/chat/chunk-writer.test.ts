/**
 * `joinDeltas`: the deltas one append carries, joined into as few chunk payloads as the
 * contract's bound allows. Seeded property: the text and its order are kept, no joined
 * delta is longer than the bound (a longer delta is never cut: it stays alone, as the
 * model sent it), and no two neighbours could have been one.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { joinDeltas } from './chunk-writer'

const SEED = 20261201
const RUNS = Number(process.env.FC_RUNS || 300)

describe('joinDeltas', () => {
  it('keeps the text, bounds each joined delta, and joins greedily', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme', maxLength: 12 }), { maxLength: 40 }), fc.integer({ min: 1, max: 30 }), (deltas, max) => {
        const joined = joinDeltas(deltas, max)
        expect(joined.join('')).toBe(deltas.join(''))
        expect(joined.every((d) => d.length > 0)).toBe(true)
        for (const d of joined) if (d.length > max) expect(deltas).toContain(d) // only an over-long delta of its own
        for (let i = 1; i < joined.length; i++) expect(joined[i - 1].length + joined[i].length).toBeGreaterThan(max)
      }),
      { seed: SEED, numRuns: RUNS },
    )
  })

  it('one delta in, the same delta out; none in, none out', () => {
    expect(joinDeltas(['a'], 10)).toEqual(['a'])
    expect(joinDeltas([], 10)).toEqual([])
    expect(joinDeltas(['ab', 'cd', 'ef'], 4)).toEqual(['abcd', 'ef'])
  })
})
