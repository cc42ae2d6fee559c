/**
 * A chat opened a window at a time is the chat: on generated conversations (sends after any
 * version, edits, regenerates, Stops at any point, an answer left streaming), the first screen
 * and the pages above it hold every turn of the latest branch exactly once, in order, and
 * joined they show what the whole fold shows, for any choice of versions (loading the pages
 * below an older version as the browser does). A browser that opened a window and then folded
 * the tail shows what the server's fold of everything shows. Seeded: a failure prints its seed.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { ChatEvent } from '../contract'
import { activeAnswer, foldChat, isTerminal, latestBranch, slotOf, type ChatState, type Turn } from './reducer'
import { chatCheckpoint } from './checkpoint'
import { visibleTurns, type Selection } from './versions'
import { firstScreen, FIRST_SCREEN_TURNS, joinWindow, latestBranchEnd, MAX_VERSIONS, pageAbove, pageBelow, type TurnsWindow } from './first-screen'
import { indexOf, keepIndex } from './turn-index'

const SEED = 20261203
const RUNS = Number(process.env.FC_RUNS || 200)

/** One thing a person (in any tab) does: `pick` chooses what it names among what exists. */
type Action = { kind: 'send' | 'edit' | 'regenerate'; pick: number; chunks: number; end: 'finish' | 'stop' | 'fail' | 'late stop'; seen: number }

const action = fc.record({
  kind: fc.constantFrom<Action['kind']>('send', 'send', 'send', 'edit', 'regenerate'),
  pick: fc.nat(),
  chunks: fc.nat({ max: 4 }),
  end: fc.constantFrom<Action['end']>('finish', 'finish', 'stop', 'fail', 'late stop'),
  seen: fc.nat(),
})

/**
 * The log the actions write; the last answer is left streaming when `open`. From action
 * `tail.from` on, what a browser showing the newest `tail.size` turns writes: a send after the
 * answer at the bottom, a regenerate of it, an edit of the message above it when that is shown.
 */
function logOf(actions: Action[], open: boolean, tail = { from: Infinity, size: 0 }): ChatEvent[] {
  const events: ChatEvent[] = []
  const messages: string[] = []
  const answers: string[] = []
  const add = (type: ChatEvent['type'], payload: unknown): string => {
    const id = `e${events.length}`
    events.push({ id, sessionId: 's', index: events.length, type, payload, createdAt: '2026-12-03T00:00:00.000Z' } as ChatEvent)
    return id
  }
  actions.forEach((a, i) => {
    const latest = i >= tail.from ? latestBranch(foldChat(events).turns).slice(-tail.size) : undefined
    const lastOf = (kind: Turn['kind']) => latest?.findLast((t) => t.kind === kind)?.id
    let forMessage: string
    if (a.kind === 'send' || messages.length === 0 || answers.length === 0 || (latest && a.kind === 'edit' && !lastOf('user'))) {
      const after = latest ? lastOf('assistant') : answers[a.pick % Math.max(1, answers.length)]
      forMessage = add('message', { text: `m${i}`, ...(after ? { after } : {}) })
      messages.push(forMessage)
    } else if (a.kind === 'edit') {
      const edits = latest ? (lastOf('user') ?? messages[0]) : messages[a.pick % messages.length]
      forMessage = add('message', { text: `edit ${i}`, edits })
      messages.push(forMessage)
    } else {
      const replaces = latest ? (lastOf('assistant') ?? answers[0]) : answers[a.pick % answers.length]
      const answer = foldChat(events).turns.find((t) => t.id === replaces)
      forMessage = answer?.kind === 'assistant' ? answer.for : messages[0]
    }
    const answer = add('generate', { for: forMessage })
    answers.push(answer)
    const from = events.length
    for (let c = 0; c < a.chunks; c++) add('chunk', { of: answer, attempt: 1, delta: `w${i}.${c} ` })
    if (open && i === actions.length - 1) return
    if (a.end === 'stop') add('cancelled', { of: answer, lastSeenIndex: from - 1 + (a.seen % (a.chunks + 1)) })
    if (a.end === 'fail') add('a2.failed', { of: answer, error: { code: 'X', message: 'no' } })
    else add('finished', { of: answer, attempt: 1, reason: a.end === 'stop' ? 'cancelled' : 'stop' })
    // A Stop that reached the log after the answer's end: it cuts what the reader had not seen yet.
    if (a.end === 'late stop') add('cancelled', { of: answer, lastSeenIndex: from - 1 + (a.seen % (a.chunks + 1)) })
  })
  return events
}

/** The first screen and every page above it, joined as the browser joins them; the windows too. */
function openWhole(full: ChatState, size: number): { joined: ChatState; windows: TurnsWindow[] } {
  const windows = [firstScreen(full, size)]
  let joined: ChatState = { turns: windows[0].turns }
  for (let cursor = windows[0].older; cursor !== null;) {
    const page = pageAbove(full, cursor, size)!
    windows.push(page)
    joined = joinWindow(joined, page, 'above')
    cursor = page.older
  }
  return { joined, windows }
}

const shape = (state: ChatState, selection?: Selection) =>
  visibleTurns(state, selection).map((v) => ({ id: v.turn.id, slot: v.slot, versions: v.versions, version: v.version }))

const conversation = fc.tuple(fc.array(action, { minLength: 1, maxLength: 40 }), fc.boolean(), fc.integer({ min: 1, max: 7 }))

describe('a chat a window at a time', () => {
  it('pages hold every turn of the latest branch exactly once, in order, and show what the whole fold shows', () => {
    fc.assert(
      fc.property(conversation, ([actions, open, size]) => {
        const full = foldChat(logOf(actions, open))
        const { joined, windows } = openWhole(full, size)
        // Each window's branch turns, top to bottom, oldest window first: the latest branch, once each.
        const shown = windows.reverse().flatMap((w) => latestBranch(full.turns).filter((t) => w.turns.includes(t)))
        expect(shown.map((t) => t.id)).toEqual(latestBranch(full.turns).map((t) => t.id))
        expect(new Set(joined.turns).size).toBe(joined.turns.length)
        for (const turn of joined.turns) expect(full.turns).toContain(turn)
        expect(shape(joined)).toEqual(shape(full))
      }),
      { seed: SEED, numRuns: RUNS },
    )
  })

  it('the first screen is bounded by its turn count and their versions, whatever the history holds', () => {
    fc.assert(
      fc.property(conversation, ([actions, open, size]) => {
        const full = foldChat(logOf(actions, open))
        const screen = firstScreen(full, size)
        const slots = new Set(screen.turns.map(slotOf))
        expect(slots.size).toBeLessThanOrEqual(size + 2) // the open answer and the newest turn may hang elsewhere
        expect(screen.older === null).toBe(latestBranch(full.turns).length <= size)
      }),
      { seed: SEED, numRuns: RUNS },
    )
  })

  it('any choice of versions shows what the whole fold shows once the pages below older versions are in', () => {
    fc.assert(
      fc.property(conversation, fc.array(fc.nat(), { maxLength: 40 }), ([actions, open, size], picks) => {
        const full = foldChat(logOf(actions, open))
        const bySlot = new Map<string, Turn[]>()
        for (const t of full.turns) bySlot.set(slotOf(t), [...(bySlot.get(slotOf(t)) ?? []), t])
        const selection: Record<string, { id: string; of: number }> = {}
        ;[...bySlot].forEach(([slot, versions], i) => {
          if (versions.length > 1) selection[slot] = { id: versions[(picks[i] ?? 0) % versions.length].id, of: versions.length }
        })
        const opened = openWhole(full, size)
        let joined = opened.joined
        const continues = new Set(opened.windows.flatMap((w) => w.continues))
        // The browser: while the branch on screen ends at a turn with more below it, load that page.
        for (let guard = 0; guard < full.turns.length + 1; guard++) {
          const end = visibleTurns(joined, selection).at(-1)?.turn
          if (!end || !continues.has(end.id)) break
          continues.delete(end.id)
          const page = pageBelow(full, end.id, size)!
          page.continues.forEach((id) => continues.add(id))
          joined = joinWindow(joined, page, 'below')
        }
        expect(shape(joined, selection)).toEqual(shape(full, selection))
      }),
      { seed: SEED, numRuns: RUNS },
    )
  })

  it('a browser that opened a window and folded the tail shows what the fold of everything shows, and pages onto it alike', () => {
    fc.assert(
      fc.property(conversation, fc.array(action, { minLength: 1, maxLength: 6 }), fc.boolean(), ([before, , size], tail, open) => {
        const events = logOf([...before, ...tail], open, { from: before.length, size })
        const opened = logOf(before, false).length
        const screen = firstScreen(foldChat(events.slice(0, opened)), size)
        const browser = foldChat(events.slice(opened), { turns: screen.turns })
        const full = foldChat(events)
        const whole = shape(full)
        expect(shape(browser)).toEqual(whole.slice(whole.length - shape(browser).length))
        // Older pages from the server as it is now, joined above the browser's window.
        let joined = browser
        for (let cursor = screen.older; cursor !== null;) {
          const page = pageAbove(full, cursor, size)!
          joined = joinWindow(joined, page, 'above')
          cursor = page.older
        }
        expect(shape(joined)).toEqual(whole)
        for (const turn of joined.turns) expect(turn).toEqual(full.turns.find((t) => t.id === turn.id && slotOf(t) === slotOf(turn)))
      }),
      { seed: SEED, numRuns: RUNS },
    )
  })
})

describe('versions', () => {
  it('a slot sends at most MAX_VERSIONS of its versions, the newest and the one on screen', () => {
    // Bare messages, no answers: every one is a version of the first message's slot.
    const events = Array.from(
      { length: 100 },
      (_, i) =>
        ({ id: `e${i}`, sessionId: 's', index: i, type: 'message', payload: { text: `m${i}` }, createdAt: '2026-12-03T00:00:00.000Z' }) as ChatEvent,
    )
    const full = foldChat(events)
    const screen = firstScreen(full)
    expect(screen.turns.map((t) => t.id)).toEqual(full.turns.slice(-MAX_VERSIONS).map((t) => t.id))
    expect(shape({ turns: screen.turns }).at(-1)?.id).toBe('e99')
  })
})

describe('cursors', () => {
  it('a cursor naming no turn is no page', () => {
    const full = foldChat(logOf([{ kind: 'send', pick: 0, chunks: 1, end: 'finish', seen: 0 }], false))
    for (const bad of ['', 'nope', 'e999', '__proto__', 'constructor']) {
      expect(pageAbove(full, bad)).toBeUndefined()
      expect(pageBelow(full, bad)).toBeUndefined()
    }
  })
})

describe('the work of an open', () => {
  /** A chat of `answers` answered messages, each after the answer before, folded as the server folds it (in pages). */
  function linearChat(answers: number): ChatState {
    const events: ChatEvent[] = []
    const add = (type: ChatEvent['type'], payload: unknown): string => {
      const id = `e${events.length}`
      events.push({ id, sessionId: 's', index: events.length, type, payload, createdAt: '2026-12-03T00:00:00.000Z' } as ChatEvent)
      return id
    }
    for (let i = 0, after: string | undefined; i < answers; i++) {
      const message = add('message', { text: `m${i}`, ...(after ? { after } : {}) })
      after = add('generate', { for: message })
      add('chunk', { of: after, attempt: 1, delta: `w${i} ` })
      add('finished', { of: after, attempt: 1, reason: 'stop' })
    }
    let state: ChatState = { turns: [] }
    for (let from = 0; from < events.length; from += 1_000) state = foldChat(events.slice(from, from + 1_000), state)
    return state
  }

  /** How many of the state's turns `read` looks at: its turn list behind a proxy that counts, with the state's own index. */
  function turnsRead(state: ChatState, read: (state: ChatState) => unknown): number {
    let reads = 0
    const turns = new Proxy(state.turns, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++
        return Reflect.get(target, key, receiver)
      },
    })
    const counted = { turns }
    keepIndex(counted, indexOf(state, slotOf))
    read(counted)
    return reads
  }

  it('what an open starts from (the branch end and the open answers in the index) stays true across checkpoints and folds in pages', () => {
    fc.assert(
      fc.property(conversation, fc.array(fc.nat(), { maxLength: 4 }), ([actions, open, size], cuts) => {
        const events = logOf(actions, open)
        const full = foldChat(events)
        // Folded as the server folds: from a checkpoint written at some index (read back through its codec), then the rest in pages.
        const at = cuts.map((cut) => cut % (events.length + 1)).sort((a, b) => a - b)
        let state: ChatState = { turns: [] }
        let from = 0
        for (const cut of at) {
          state = foldChat(events.slice(from, cut), state)
          const decoder = chatCheckpoint.decoder()
          for (const piece of chatCheckpoint.encode(state)) decoder.add(piece)
          state = decoder.end()
          from = cut
        }
        state = foldChat(events.slice(from), state)
        expect(activeAnswer(state)?.id).toBe(full.turns.findLast((t) => t.kind === 'assistant' && !isTerminal(t.status))?.id)
        expect(latestBranchEnd(state)?.id).toBe(latestBranch(full.turns).at(-1)?.id)
        expect(firstScreen(state, size)).toEqual(firstScreen(full, size))
      }),
      { seed: SEED, numRuns: RUNS },
    )
  })

  it('the first screen reads as many turns in a chat of 2,000 answers as in one of 100', () => {
    const short = turnsRead(linearChat(100), (state) => firstScreen(state))
    const long = turnsRead(linearChat(2_000), (state) => firstScreen(state))
    expect(long).toBe(short)
    expect(short).toBeLessThan(FIRST_SCREEN_TURNS * 4)
  })

  it('and in a chat of 2,000 bare messages (one slot of 2,000 versions) as in one of 100', () => {
    const messages = (count: number) =>
      foldChat(
        Array.from(
          { length: count },
          (_, i) =>
            ({
              id: `e${i}`,
              sessionId: 's',
              index: i,
              type: 'message',
              payload: { text: `m${i}` },
              createdAt: '2026-12-03T00:00:00.000Z',
            }) as ChatEvent,
        ),
      )
    const short = turnsRead(messages(100), (state) => firstScreen(state))
    expect(turnsRead(messages(2_000), (state) => firstScreen(state))).toBe(short)
    expect(short).toBeLessThan(MAX_VERSIONS * 4)
  })

  it('and so does the first screen of a chat read back from its checkpoint with an answer folded on', () => {
    const reopened = (answers: number) => {
      const decoder = chatCheckpoint.decoder()
      for (const piece of chatCheckpoint.encode(linearChat(answers))) decoder.add(piece)
      const state = decoder.end()
      const last = state.turns.at(-1)!.id
      const more = [
        {
          id: 'm-new',
          sessionId: 's',
          index: 1e6,
          type: 'message',
          payload: { text: 'one more', after: last },
          createdAt: '2026-12-03T00:00:00.000Z',
        },
        { id: 'g-new', sessionId: 's', index: 1e6 + 1, type: 'generate', payload: { for: 'm-new' }, createdAt: '2026-12-03T00:00:00.000Z' },
      ] as ChatEvent[]
      return foldChat(more, state)
    }
    const short = turnsRead(reopened(100), (state) => firstScreen(state))
    expect(turnsRead(reopened(2_000), (state) => firstScreen(state))).toBe(short)
    expect(short).toBeLessThan(FIRST_SCREEN_TURNS * 4)
  })
})

describe('a cold open (a process holding no state of the chat)', () => {
  /** `count` answered messages, each after the answer before: a history of several checkpoint blocks. */
  const linear = (count: number): Action[] =>
    Array.from({ length: count }, (_, i) => ({ kind: 'send', pick: Math.max(0, i - 1), chunks: 1, end: 'finish', seen: 0 }))
  const PREFIX = linear(300) // 600 turns: blocks of 256, 256 and 88

  /**
   * What the library does for `{ partial: true }` (lib/a2 §12): the checkpoint at `cut` read in
   * part (its head, then the blocks it names), the events since folded on, kept if the codec
   * accepts it. Undefined: refused (the whole checkpoint is read instead). And the turns read.
   */
  function coldOpen(events: ChatEvent[], cut: number): { state: ChatState; read: number } | undefined {
    let atCut: ChatState = { turns: [] }
    for (let from = 0; from < cut; from += 1_000) atCut = foldChat(events.slice(from, Math.min(cut, from + 1_000)), atCut)
    const [head, ...blocks] = chatCheckpoint.encode(atCut)
    const partial = chatCheckpoint.partial!
    const start = partial.decode(
      head,
      partial.needs(head).map((piece) => blocks[piece - 1]),
    )
    const since = events.slice(cut)
    const folded = foldChat(since, start)
    return partial.accepts(start, since, folded) ? { state: folded, read: start.turns.length } : undefined
  }

  const stats = { opens: 0, accepted: 0, fewer: 0 }

  it('shows the first screen the whole fold shows, or reads the whole checkpoint (edits far back, regenerates of old turns, open answers, late Stops)', () => {
    fc.assert(
      fc.property(fc.array(action, { minLength: 1, maxLength: 30 }), fc.nat(), fc.boolean(), fc.nat(), (actions, split, open, back) => {
        // Anything anywhere first (edits far back, regenerates of old turns, sends after old versions),
        // then what a browser showing the newest turns writes: what a checkpoint's events since mostly are.
        const events = logOf([...PREFIX, ...actions], open, { from: PREFIX.length + (split % (actions.length + 1)), size: FIRST_SCREEN_TURNS })
        // The checkpoint lies up to ~400 events back (the library writes one every 1,000 folded events).
        const cut = Math.max(0, events.length - (back % 400))
        const full = foldChat(events)
        const cold = coldOpen(events, cut)
        stats.opens++
        if (!cold) return
        stats.accepted++
        if (cold.read < full.turns.length - (events.length - cut)) stats.fewer++
        expect(firstScreen(cold.state)).toEqual(firstScreen(full))
        expect(activeAnswer(cold.state)?.id).toBe(activeAnswer(full)?.id)
        expect(cold.state.turns.at(-1)).toEqual(full.turns.at(-1))
        // The browser folds the tail onto the screen it got: alike from either.
        const tail = [
          {
            id: 'm-tail',
            sessionId: 's',
            index: events.length,
            type: 'message',
            payload: { text: 'next', after: latestBranch(full.turns).findLast((t) => t.kind === 'assistant')?.id ?? '' },
            createdAt: '2026-12-03T00:00:00.000Z',
          },
        ] as ChatEvent[]
        expect(shape(foldChat(tail, { turns: firstScreen(cold.state).turns }))).toEqual(shape(foldChat(tail, { turns: firstScreen(full).turns })))
      }),
      { seed: SEED + 8, numRuns: Math.max(50, RUNS / 2) },
    )
    // Not a refusal every time: many opens read part, and a part short of the whole.
    expect(stats.accepted).toBeGreaterThan(stats.opens / 3)
    expect(stats.fewer).toBeGreaterThan(stats.opens / 4)
  })

  it('reads two blocks of 256 turns of a 2,000-answer chat, however far back its checkpoint is written', () => {
    const events = logOf(linear(2_000), false)
    for (const back of [0, 10, 399]) {
      const cold = coldOpen(events, events.length - back)!
      expect(cold.read).toBeLessThanOrEqual(2 * 256)
      expect(firstScreen(cold.state)).toEqual(firstScreen(foldChat(events)))
    }
  })
})
