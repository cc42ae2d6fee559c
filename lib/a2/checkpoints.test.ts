/**
 * Folding a session from checkpoints (`server.fold`, `ctx.fold`): the same state as folding
 * every event, at the cost of the events since the newest usable checkpoint.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { consumer, createServer, isA2Error, type A2Event, type Fold, type Store } from '@/lib/a2/server'
import { layers, useTestStore } from './test-kit/db'
import { testContract } from './test-kit/contract'
import { waitUntil } from './test-kit/runtime'
import { query } from './internal/store/store'
import { forgetFolds, SLICE_CHARS } from './internal/log/checkpoints'

interface Texts {
  texts: string[]
  last: number
}

/** A fold that keeps every message's text and counts the events it was given (what a fold costs). */
function textsFold(name = 'texts@1') {
  const counter = { seen: 0 }
  const fold: Fold<Texts> = {
    name,
    initial: { texts: [], last: -1 },
    fold: (events: A2Event[], state: Texts) => {
      counter.seen += events.length
      const texts = [...state.texts]
      for (const e of events) if (e.type === 'message') texts.push(kept((e.payload as { text: string }).text))
      return { texts, last: events.at(-1)?.index ?? state.last }
    },
  }
  return { fold, counter }
}

/** Text the log accepts that JSON and SQL must carry unchanged: RTL override, astral symbols, quotes and backslashes, separators. */
const HOSTILE = ['\u202Eevil', '𝄞🙂', '"}]\\', '\u2028line', "'; drop table a2_events; --"]

/**
 * What the fold keeps of a message: its text with a NUL and a lone surrogate after it. The log
 * refuses both, but a fold's state may hold anything JSON does (jsonb would refuse the NUL).
 */
const kept = (text: string) => `${text}\u0000\uD800`

/** What a codec made or read, piece by piece: its size, and whether the event loop turned since the piece before. */
interface PieceRecord {
  chars: number
  turned: boolean
}

/**
 * `textsFold` with a checkpoint codec: a piece for `last`, then a piece per ten texts. It
 * records every piece it makes or reads, and whether the event loop turned since the one
 * before (a setImmediate queued at each piece has run): how the runtime slices the work.
 */
function piecesFold(name = 'texts-pieces@1') {
  const { fold, counter } = textsFold(name)
  const encoded: PieceRecord[] = []
  const decoded: PieceRecord[] = []
  let turned = false
  const record = (list: PieceRecord[], piece: string) => {
    list.push({ chars: piece.length, turned })
    turned = false
    setImmediate(() => (turned = true))
  }
  const withCodec: Fold<Texts> = {
    ...fold,
    checkpoint: {
      *encode(state) {
        const last = JSON.stringify(state.last)
        record(encoded, last)
        yield last
        for (let i = 0; i < state.texts.length; i += 10) {
          const piece = JSON.stringify(state.texts.slice(i, i + 10))
          record(encoded, piece)
          yield piece
        }
      },
      decoder() {
        const state: Texts = { texts: [], last: -1 }
        let first = true
        return {
          add(piece) {
            record(decoded, piece)
            if (first) state.last = JSON.parse(piece) as number
            else state.texts.push(...(JSON.parse(piece) as string[]))
            first = false
          },
          end: () => state,
        }
      },
    },
  }
  return { fold: withCodec, counter, encoded, decoded }
}

/**
 * `piecesFold` whose codec reads in part: piece 0 says how many pieces follow, a partial read
 * takes the newest one (its ten newest texts) and folds the events since onto them. `accepts`
 * refuses a fold whose events hold a text starting `refuse`. It records the pieces it decodes.
 */
function partialFold(name = 'texts-partial@1') {
  const { fold, counter, encoded, decoded } = piecesFold(name)
  const read: string[][] = []
  const codec = fold.checkpoint!
  const withPartial: Fold<Texts> = {
    ...fold,
    checkpoint: {
      *encode(state) {
        const [, ...rest] = codec.encode(state)
        yield JSON.stringify({ last: state.last, pieces: rest.length })
        yield* rest
      },
      decoder() {
        const inner = codec.decoder()
        let first = true
        return {
          add(piece) {
            inner.add(first ? JSON.stringify((JSON.parse(piece) as { last: number }).last) : piece)
            first = false
          },
          end: () => inner.end(),
        }
      },
      partial: {
        needs: (head) => [(JSON.parse(head) as { pieces: number }).pieces],
        decode(head, pieces) {
          read.push(pieces)
          return { texts: pieces.flatMap((piece) => JSON.parse(piece) as string[]), last: (JSON.parse(head) as { last: number }).last }
        },
        accepts: (_start, events) => !events.some((e) => (e.payload as { text?: string }).text?.startsWith('refuse')),
      },
    },
  }
  return { fold: withPartial, counter, encoded, decoded, read }
}

/** The most characters made or read in one turn of the event loop (the first piece starts a turn). */
function largestSlice(records: PieceRecord[]): number {
  let largest = 0
  let slice = 0
  records.forEach((record, i) => {
    slice = i > 0 && record.turned ? record.chars : slice + record.chars
    largest = Math.max(largest, slice)
  })
  return largest
}

describe.each(layers)('folding from checkpoints on %s', (kind) => {
  const testStore = useTestStore(kind)
  let store: Store
  let server: ReturnType<typeof createServer<typeof testContract>>
  beforeAll(() => {
    store = testStore()
    server = createServer({ contract: testContract, consumers: [], store })
  })

  /** A session of one message per text, appended 500 at a time. */
  async function sessionOfTexts(texts: string[], owner = 'ann'): Promise<{ id: string; texts: string[] }> {
    const { id } = await server.sessions.create(owner)
    for (let i = 0; i < texts.length; i += 500) {
      await server.append(id, ...texts.slice(i, i + 500).map((text) => ({ type: 'message' as const, payload: { text } })))
    }
    return { id, texts }
  }
  const sessionWith = (count: number, owner = 'ann') =>
    sessionOfTexts(
      Array.from({ length: count }, (_, i) => HOSTILE[i % HOSTILE.length] + i),
      owner,
    )
  const checkpointsOf = async (id: string) =>
    await query<{ fold: string; at_index: number }>(
      store.db,
      sql`select fold, at_index from a2_checkpoints where session_id = ${id} order by at_index`,
    )

  it('folds to the same state as every event, then only the events since its checkpoint', async () => {
    const { id, texts } = await sessionWith(2_500)
    const { fold, counter } = textsFold()

    const first = await server.fold(id, 'ann', fold)
    expect(first).toEqual({
      state: { texts: texts.map(kept), last: 2_499 },
      lastSeenIndex: 2_499,
      session: expect.objectContaining({ id, head: 2_500 }),
    })
    expect(counter.seen).toBe(2_500)
    expect(await checkpointsOf(id)).toEqual([{ fold: 'texts@1', at_index: 2_499 }])

    counter.seen = 0
    expect(await server.fold(id, 'ann', fold)).toEqual(first)
    expect(counter.seen).toBe(0)

    await server.append(id, { type: 'message', payload: { text: 'one more' } }, { type: 'message', payload: { text: 'and another' } })
    counter.seen = 0
    const later = await server.fold(id, 'ann', fold)
    expect(later.state.texts).toEqual([...texts, 'one more', 'and another'].map(kept))
    expect(later.lastSeenIndex).toBe(2_501)
    expect(counter.seen).toBe(2)
  })

  it("writes a session's first checkpoint after 256 folded events, the next ones after 1,000 more", async () => {
    const { id } = await sessionWith(300)
    const { fold } = textsFold()
    await server.fold(id, 'ann', fold)
    expect(await checkpointsOf(id)).toEqual([{ fold: 'texts@1', at_index: 299 }])
    await server.append(id, ...Array.from({ length: 900 }, (_, i) => ({ type: 'message' as const, payload: { text: `n${i}` } })))
    forgetFolds()
    await server.fold(id, 'ann', fold) // 900 past the checkpoint: none new
    expect(await checkpointsOf(id)).toEqual([{ fold: 'texts@1', at_index: 299 }])
  })

  it('starts from the state this process folded last when it is newer than the newest checkpoint', async () => {
    const { id } = await sessionWith(2_500)
    const { fold, counter } = textsFold()
    await server.fold(id, 'ann', fold) // a checkpoint at 2,499
    const more = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ type: 'message' as const, payload: { text: `${tag}${i}` } }))
    await server.append(id, ...more(500, 'a'))
    expect((await server.fold(id, 'ann', fold)).lastSeenIndex).toBe(2_999) // 500 folded: no new checkpoint
    await server.append(id, ...more(10, 'b'))
    counter.seen = 0
    const folded = await server.fold(id, 'ann', fold)
    // From its own fold at 2,999, not from the checkpoint at 2,499 (510 events).
    expect(counter.seen).toBe(10)
    expect(folded.state.texts.slice(-2)).toEqual([kept('b8'), kept('b9')])
    expect(folded.state.texts).toHaveLength(3_010)
    // A history before its trigger never starts from a state past it.
    counter.seen = 0
    expect((await server.fold(id, 'ann', fold, { before: 2_600 })).state.texts).toHaveLength(2_600)
    expect(counter.seen).toBe(100) // from the checkpoint at 2,499
  })

  it('folds a session too short for a checkpoint once: the next fold starts from that state, with and without a codec', async () => {
    for (const { fold, counter } of [textsFold(), piecesFold()]) {
      const { id, texts } = await sessionWith(250)
      expect((await server.fold(id, 'ann', fold)).state.texts).toEqual(texts.map(kept))
      expect(await checkpointsOf(id)).toEqual([]) // 250 folded: no checkpoint
      await server.append(id, { type: 'message', payload: { text: 'one more' } })
      counter.seen = 0
      const later = await server.fold(id, 'ann', fold)
      expect(counter.seen).toBe(1)
      expect(later.state.texts).toEqual([...texts, 'one more'].map(kept))
      expect(later.lastSeenIndex).toBe(250)
    }
  })

  it('never reads a checkpoint at or past `before`, nor one of another fold name', async () => {
    const { id, texts } = await sessionWith(2_200)
    const { fold } = textsFold()
    await server.fold(id, 'ann', fold) // a checkpoint at 2,199

    const { fold: early, counter } = textsFold()
    expect(await server.fold(id, 'ann', early, { before: 1_200 })).toMatchObject({
      state: { texts: texts.slice(0, 1_200).map(kept), last: 1_199 },
      lastSeenIndex: 1_199,
    })
    expect(counter.seen).toBe(1_200)

    const { fold: renamed, counter: renamedCounter } = textsFold('texts@2')
    expect((await server.fold(id, 'ann', renamed)).state.texts).toEqual(texts.map(kept))
    expect(renamedCounter.seen).toBe(2_200)
  })

  it('keeps the newest three checkpoints of a fold, and none once the session is deleted', async () => {
    const { id } = await sessionWith(1_000)
    const { fold } = textsFold()
    for (let round = 0; round < 4; round++) {
      await server.fold(id, 'ann', fold)
      await server.append(id, ...Array.from({ length: 1_000 }, (_, i) => ({ type: 'message' as const, payload: { text: `r${round}-${i}` } })))
    }
    await server.fold(id, 'ann', fold)
    expect((await checkpointsOf(id)).map((c) => c.at_index)).toEqual([2_999, 3_999, 4_999])
    await server.sessions.delete(id, 'ann')
    expect(await checkpointsOf(id)).toEqual([])
  })

  /** `count` messages of 1,000 characters: ~1 MB of state for `textsFold`. */
  const sessionWithLongTexts = (count: number) =>
    sessionOfTexts(Array.from({ length: count }, (_, i) => `${HOSTILE[i % HOSTILE.length]}${i}`.padEnd(1_000, 'x')))
  const piecesOf = async (id: string) =>
    await query<{ at_index: number; pieces: number }>(
      store.db,
      sql`select at_index, count(*)::int as pieces from a2_checkpoint_pieces where session_id = ${id} group by at_index order by at_index`,
    )

  it('writes and reads a checkpoint in pieces, a slice of ~SLICE_CHARS of them per turn of the event loop', async () => {
    const { id, texts } = await sessionWithLongTexts(1_200)
    const { fold, counter, encoded, decoded } = piecesFold()
    const whole = { state: { texts: texts.map(kept), last: 1_199 }, lastSeenIndex: 1_199 }

    expect(await server.fold(id, 'ann', fold)).toMatchObject(whole)
    expect(await piecesOf(id)).toEqual([{ at_index: 1_199, pieces: 121 }])
    expect(encoded).toHaveLength(121)
    // ~1.2 MB of pieces, never all in one turn of the loop: at most a slice and the piece that ends it.
    const largestPiece = Math.max(...encoded.map((r) => r.chars))
    expect(largestSlice(encoded)).toBeLessThanOrEqual(SLICE_CHARS + largestPiece)
    expect(encoded.filter((r) => r.turned).length).toBeGreaterThanOrEqual(3)

    // Another process (nothing parsed here): the state from the pieces, read a slice at a time.
    forgetFolds()
    counter.seen = 0
    expect(await server.fold(id, 'ann', fold)).toMatchObject(whole)
    expect(counter.seen).toBe(0)
    expect(decoded.map((r) => r.chars)).toEqual(encoded.map((r) => r.chars))
    expect(largestSlice(decoded)).toBeLessThanOrEqual(SLICE_CHARS + largestPiece)
    expect(decoded.filter((r) => r.turned).length).toBeGreaterThanOrEqual(3)
  })

  it('reads checkpoints of its own form only: pieces with a codec, one JSON text without', async () => {
    for (const [writer, reader] of [
      [piecesFold('texts-either@1').fold, textsFold('texts-either@1')],
      [textsFold('texts-either@2').fold, piecesFold('texts-either@2')],
    ] as const) {
      const { id, texts } = await sessionWith(1_100)
      await server.fold(id, 'ann', writer) // a checkpoint at 1,099
      expect(await checkpointsOf(id)).toEqual([{ fold: writer.name, at_index: 1_099 }])
      forgetFolds()
      expect((await server.fold(id, 'ann', reader.fold)).state.texts).toEqual(texts.map(kept))
      expect(reader.counter.seen).toBe(1_100) // from the start: that checkpoint is not its form
    }
  })

  it('keeps the pieces of the newest three checkpoints, and none once the session is deleted', async () => {
    const { id } = await sessionWith(1_000)
    const { fold } = piecesFold()
    for (let round = 0; round < 4; round++) {
      await server.fold(id, 'ann', fold)
      await server.append(id, ...Array.from({ length: 1_000 }, (_, i) => ({ type: 'message' as const, payload: { text: `r${round}-${i}` } })))
    }
    await server.fold(id, 'ann', fold)
    expect(await piecesOf(id)).toEqual([
      { at_index: 2_999, pieces: 301 },
      { at_index: 3_999, pieces: 401 },
      { at_index: 4_999, pieces: 501 },
    ])
    await server.sessions.delete(id, 'ann')
    expect(await piecesOf(id)).toEqual([])
    expect(await checkpointsOf(id)).toEqual([])
  })

  it('reads part of a checkpoint when asked and holding no state of the session: piece 0, the pieces it names, the events since', async () => {
    const { id, texts } = await sessionWith(1_205)
    const { fold, counter, read } = partialFold()
    const whole = { texts: texts.map(kept), last: 1_204 }
    expect((await server.fold(id, 'ann', fold)).state).toEqual(whole) // a checkpoint at 1,204: 121 pieces of ten, the last of five
    await server.append(id, { type: 'message', payload: { text: 'since' } })

    // Holding its state, this process folds on from it: nothing to read in part.
    expect(await server.fold(id, 'ann', fold, { partial: true })).toMatchObject({ state: { texts: [...whole.texts, kept('since')] } })
    expect(read).toEqual([])

    forgetFolds()
    counter.seen = 0
    const part = await server.fold(id, 'ann', fold, { partial: true })
    expect(part).toMatchObject({ partial: true, lastSeenIndex: 1_205, state: { texts: [...whole.texts.slice(1_200), kept('since')], last: 1_205 } })
    expect(read).toEqual([[JSON.stringify(whole.texts.slice(1_200))]])
    expect(counter.seen).toBe(1)
    // A part is neither remembered nor written: the next fold (another process, or this one) reads the whole.
    expect(await checkpointsOf(id)).toEqual([{ fold: fold.name, at_index: 1_204 }])
    const next = await server.fold(id, 'ann', fold)
    expect(next.partial).toBeUndefined()
    expect(next.state.texts).toEqual([...whole.texts, kept('since')])
    forgetFolds()
    expect((await server.fold(id, 'ann', fold)).partial).toBeUndefined() // not asked: the whole checkpoint
    expect(read).toHaveLength(1)
  })

  it("reads the whole checkpoint when the codec does not accept the part's fold, or no checkpoint is in pieces", async () => {
    const { id, texts } = await sessionWith(1_100)
    const { fold, read } = partialFold()
    await server.fold(id, 'ann', fold)
    await server.append(id, { type: 'message', payload: { text: 'refuse this' } })
    forgetFolds()
    const folded = await server.fold(id, 'ann', fold, { partial: true })
    expect(folded.partial).toBeUndefined()
    expect(folded.state.texts).toEqual([...texts, 'refuse this'].map(kept))
    expect(read).toHaveLength(1) // it was read, then refused

    const short = await sessionWith(20) // too short for a checkpoint
    forgetFolds()
    expect(await server.fold(short.id, 'ann', fold, { partial: true })).toMatchObject({ state: { texts: short.texts.map(kept) } })
    expect(read).toHaveLength(1)
  })

  it("refuses another owner's session, like every read", async () => {
    const { id } = await sessionWith(3)
    const error = await server.fold(id, 'mallory', textsFold().fold).catch((e: unknown) => e)
    expect(isA2Error(error) && error.code).toBe('not_found')
  })

  it('gives a run the history before its trigger', async () => {
    const { fold } = textsFold()
    const seen: Texts[] = []
    const reader = consumer({ contract: testContract, name: 'reader', types: ['generate'] }).run(async (ctx) => {
      seen.push((await ctx.fold(fold)).state)
    })
    const withReader = createServer({ contract: testContract, consumers: [reader], store })
    const { id } = await withReader.sessions.create('ann')
    await withReader.append(
      id,
      { type: 'message', payload: { text: 'before' } },
      { type: 'generate', payload: {} },
      { type: 'message', payload: { text: 'after' } },
    )
    await withReader.startWorker({ pollMs: 20 })
    try {
      await waitUntil(() => seen.length > 0, 'the run to fold its history')
      expect(seen[0]).toEqual({ texts: [kept('before')], last: 0 })
    } finally {
      await withReader.stopWorkers()
    }
  })
})
