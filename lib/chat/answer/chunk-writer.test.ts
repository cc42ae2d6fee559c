/**
 * `joinDeltas`: the deltas one append carries, joined into as few chunk payloads as the
 * contract's bound allows. Seeded property: the text and its order are kept, no joined
 * delta is longer than the bound (a longer delta is never cut: it stays alone, as the
 * model sent it), and no two neighbours could have been one.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { chunkWriter, joinDeltas } from './chunk-writer'

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

describe('chunkWriter while the store is away', () => {
  it('holds the stream back past its byte bound, and writes every delta once, in order, when the store answers', async () => {
    const written: string[] = []
    let release!: () => void
    let stalled = new Promise<void>((resolve) => (release = resolve))
    const writer = chunkWriter(
      async (deltas) => {
        await stalled // the first append waits out the outage (outage.ts sends it again meanwhile)
        written.push(...deltas)
      },
      undefined,
      10,
    )
    writer.add('abcd') // in flight, stalled
    await expect(Promise.race([writer.room(), 'held'])).resolves.not.toBe('held') // 4 of 10 bytes
    writer.add('efgh')
    writer.add('ijkl') // 12 bytes unwritten
    let roomy = false
    const room = writer.room().then(() => (roomy = true))
    // Room could only come from a write settling, and the write is held: a turn of the loop lets any wrongly early one show.
    await new Promise((resolve) => setImmediate(resolve))
    expect(roomy).toBe(false) // the model is not read meanwhile
    release()
    stalled = Promise.resolve()
    await room
    await writer.flush()
    expect(written.join('')).toBe('abcdefghijkl')
  })

  it('counts bytes, not characters, and a dropped writer lets the stream go', async () => {
    const writer = chunkWriter(() => new Promise(() => {}), undefined, 8)
    writer.add('ééé') // 6 bytes, 3 characters
    writer.add('ü') // 8 bytes
    let roomy = false
    const room = writer.room().then(() => (roomy = true))
    await new Promise((resolve) => setImmediate(resolve)) // a turn: the write never settles, so no room may show
    expect(roomy).toBe(false)
    writer.drop()
    await room
  })
})
