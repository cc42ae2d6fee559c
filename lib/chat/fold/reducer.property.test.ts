/**
 * The fast fold is the simple fold, faster: on generated logs — hostile ones included —
 * `foldChat` equals the one-event-at-a-time reference, returns the very same state when an
 * event changes nothing, and resumes exactly from a JSON checkpoint at any index (what the
 * server stores in a2_checkpoints), keeping beside each state what an open starts from (its
 * newest open answer, its latest branch's end) as a scan of the reference finds them. Seeded: a
 * failure prints its seed and path to replay.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { TOOL_CALL_STATES, type ChatEvent } from '../contract'
import { activeAnswer, answerRest, answerText, foldChat, isTerminal, latestBranch, type AnswerTurn, type ChatState } from './reducer'
import { latestBranchEnd } from './first-screen'
import { referenceReduce } from './reducer.reference'
import { chatCheckpoint } from './checkpoint'

const SEED = 20261201
const RUNS = Number(process.env.FC_RUNS || 300)

/** Text a log may hold: plain, empty-ish, lone surrogates, NUL and control characters, astral symbols, markup. */
const hostileText = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.constantFrom('\uD800', 'a\uDFFFb', '\u0000', 'x\u0000y', '\u202E', '𝄞🙂', '<script>', '"}]', '\\', ' ', '\n\n'),
)

/** An event's references: ids that exist (of any kind), ids that never will, and edge strings. */
const reference = (ids: readonly string[]) =>
  fc.oneof(
    { weight: 4, arbitrary: ids.length ? fc.constantFrom(...ids) : fc.constant('e0') },
    { weight: 1, arbitrary: fc.constantFrom('', 'nope', 'e999', '__proto__', 'constructor', 'e0\u0000') },
  )

/** A few call ids, so steps and states of one call meet; tool names and inputs as JSON a model could send. */
const callId = fc.constantFrom('call_a', 'call_b', 'call_c')
const toolName = fc.constantFrom('sendWebhook', 'listNotes')
const toolInput = fc.oneof(fc.record({ message: hostileText }), fc.constant({}), fc.constant(null))

type Draft = { type: ChatEvent['type']; pick: (ids: string[], index: number) => fc.Arbitrary<unknown> }

const drafts: Draft[] = [
  {
    type: 'message',
    pick: (ids) =>
      fc.record(
        { text: hostileText, edits: fc.option(reference(ids), { nil: undefined }), after: fc.option(reference(ids), { nil: undefined }) },
        { requiredKeys: ['text'] },
      ),
  },
  {
    type: 'generate',
    pick: (ids) =>
      fc.record(
        {
          for: reference(ids),
          replaces: fc.option(reference(ids), { nil: undefined }),
          model: fc.option(fc.constantFrom('offline', 'offline-brief'), { nil: undefined }),
          continues: fc.option(reference(ids), { nil: undefined }),
        },
        { requiredKeys: ['for'] },
      ),
  },
  { type: 'chunk', pick: (ids) => fc.record({ of: reference(ids), attempt: fc.integer({ min: 1, max: 4 }), delta: hostileText }) },
  { type: 'chunk', pick: (ids) => fc.record({ of: reference(ids), attempt: fc.integer({ min: 1, max: 4 }), delta: hostileText }) },
  {
    type: 'cancelled',
    pick: (ids, index) =>
      fc.record({ of: reference(ids), lastSeenIndex: fc.oneof(fc.integer({ min: -1, max: index + 2 }), fc.constant(Number.MAX_SAFE_INTEGER)) }),
  },
  {
    type: 'finished',
    pick: (ids) =>
      fc.record(
        {
          of: reference(ids),
          attempt: fc.integer({ min: 1, max: 4 }),
          reason: fc.constantFrom('stop', 'length', 'content-filter', 'tool-calls', 'cancelled', 'error', 'other'),
          usage: fc.option(
            fc.record({ inputTokens: fc.option(fc.nat(), { nil: undefined }), outputTokens: fc.option(fc.nat(), { nil: undefined }) }),
            { nil: undefined },
          ),
        },
        { requiredKeys: ['of', 'attempt', 'reason'] },
      ),
  },
  { type: 'reasoning', pick: (ids) => fc.record({ of: reference(ids), attempt: fc.integer({ min: 1, max: 4 }), delta: hostileText }) },
  {
    type: 'tool.input',
    pick: (ids) => fc.record({ of: reference(ids), attempt: fc.integer({ min: 1, max: 4 }), call: callId, tool: toolName, delta: hostileText }),
  },
  {
    type: 'tool.call',
    pick: (ids) => fc.record({ of: reference(ids), attempt: fc.integer({ min: 1, max: 4 }), call: callId, tool: toolName, input: toolInput }),
  },
  {
    type: 'tool.state',
    pick: (ids) =>
      fc.record(
        {
          of: reference(ids),
          call: callId,
          tool: toolName,
          state: fc.constantFrom(...TOOL_CALL_STATES),
          input: fc.option(toolInput, { nil: undefined }),
          result: fc.option(toolInput, { nil: undefined }),
          error: fc.option(hostileText, { nil: undefined }),
          settle: fc.option(fc.constantFrom('reconcile' as const, 'operator' as const), { nil: undefined }),
          // A wait's cost (answer/handler.ts): added to its own answer's, never a continuing version's.
          usage: fc.option(
            fc.record({
              inputTokens: fc.option(fc.nat(), { nil: undefined }),
              outputTokens: fc.option(fc.nat(), { nil: undefined }),
              counted: fc.option(fc.constant(true as const), { nil: undefined }),
            }),
            { nil: undefined },
          ),
        },
        { requiredKeys: ['of', 'call', 'tool', 'state'] },
      ),
  },
  { type: 'note.saved', pick: (ids) => fc.record({ of: reference(ids), note: hostileText, key: fc.string({ maxLength: 6 }) }) },
  { type: 'a2.failed', pick: (ids) => fc.record({ of: reference(ids), error: fc.record({ code: fc.constant('X'), message: hostileText }) }) },
  { type: 'a2.renamed', pick: () => fc.record({ title: hostileText }) },
]

/** A log of up to `max` events with unique ids (the log guarantees them) whose payloads refer back to earlier ones. */
function chatLog(max: number): fc.Arbitrary<ChatEvent[]> {
  return fc.array(fc.tuple(fc.nat({ max: drafts.length - 1 }), fc.nat()), { maxLength: max }).chain((shape) => {
    const ids = shape.map((_, i) => `e${i}`)
    return fc
      .tuple(...shape.map(([kind], i) => drafts[kind].pick(ids.slice(0, i + 2), i)))
      .map((payloads) =>
        payloads.map(
          (payload, i) =>
            ({ id: ids[i], sessionId: 's', index: i, type: drafts[shape[i][0]].type, payload, createdAt: '2026-12-01T00:00:00.000Z' }) as ChatEvent,
        ),
      )
  })
}

/** What a checkpoint stores and loads: JSON (undefined fields drop out, which the fold treats alike). */
const viaJson = (state: ChatState): ChatState => JSON.parse(JSON.stringify(state))

/** A checkpoint as the server writes and reads the chat's: its codec's pieces (blocks of turns), decoded piece by piece. */
function viaPieces(state: ChatState): { pieces: string[]; state: ChatState } {
  const [head, ...pieces] = chatCheckpoint.encode(state)
  const decoder = chatCheckpoint.decoder()
  for (const piece of [head, ...pieces]) decoder.add(piece)
  return { pieces, state: decoder.end() }
}

/**
 * 400 answered messages (800 turns: three full blocks of 256 and a partial one) under a
 * generated log, which either refers to the prefix's ids (edits, stops and chunks of old
 * turns: changes inside kept blocks) or to its own.
 */
const PREFIX: ChatEvent[] = Array.from({ length: 400 }, (_, a) => [
  { id: `e${3 * a}`, type: 'message', payload: { text: `q${a}`, ...(a > 0 ? { after: `e${3 * a - 2}` } : {}) } },
  { id: `e${3 * a + 1}`, type: 'generate', payload: { for: `e${3 * a}` } },
  { id: `e${3 * a + 2}`, type: 'finished', payload: { of: `e${3 * a + 1}`, attempt: 1, reason: 'stop' } },
])
  .flat()
  .map((e, index) => ({ ...e, index, sessionId: 's', createdAt: '2026-12-01T00:00:00.000Z' }) as ChatEvent)

/** The reference fold of the prefix, once (it is pure: every run continues from the same state). */
const PREFIX_REFERENCE = PREFIX.reduce(referenceReduce, { turns: [] } as ChatState)

function onPrefix(log: ChatEvent[], own: boolean): ChatEvent[] {
  const REFERENCES = ['of', 'for', 'edits', 'after', 'replaces']
  const rename = (value: unknown) => (own && typeof value === 'string' && /^e\d+$/.test(value) ? `x${value.slice(1)}` : value)
  return [
    ...PREFIX,
    ...log.map((e, i) => {
      const payload = Object.fromEntries(Object.entries(e.payload as object).map(([k, v]) => [k, REFERENCES.includes(k) ? rename(v) : v]))
      return { ...e, id: `x${i}`, index: PREFIX.length + i, payload } as ChatEvent
    }),
  ]
}

/**
 * What an open starts from, as the state's index keeps it (the newest open answer, the latest
 * branch's last turn: turn-index.ts), beside the same found by scanning the reference's turns.
 */
function startsOfOpen(state: ChatState, reference: ChatState) {
  const open = reference.turns.findLast((t) => t.kind === 'assistant' && !isTerminal(t.status))
  expect(activeAnswer(state)?.id).toBe(open?.id)
  expect(latestBranchEnd(state)?.id).toBe(latestBranch(reference.turns).at(-1)?.id)
}

describe('foldChat against the reference fold', () => {
  it('folds every generated log to the same state', () => {
    fc.assert(
      fc.property(chatLog(80), (log) => {
        const expected = log.reduce(referenceReduce, { turns: [] } as ChatState)
        expect(viaJson(foldChat(log))).toEqual(viaJson(expected))
      }),
      { seed: SEED, numRuns: RUNS },
    )
  })

  it('returns the same state object exactly when the reference changes nothing', () => {
    fc.assert(
      fc.property(chatLog(40), (log) => {
        let fast: ChatState = { turns: [] }
        let slow: ChatState = { turns: [] }
        for (const event of log) {
          const nextFast = foldChat([event], fast)
          const nextSlow = referenceReduce(slow, event)
          expect(nextFast === fast).toBe(nextSlow === slow)
          fast = nextFast
          slow = nextSlow
          startsOfOpen(fast, slow)
        }
        expect(viaJson(fast)).toEqual(viaJson(slow))
      }),
      { seed: SEED + 1, numRuns: RUNS },
    )
  })

  it('folds different tails from one shared state, a piece at a time, each as if alone (the index kept beside a state)', () => {
    fc.assert(
      fc.property(chatLog(60), chatLog(30), fc.nat(), fc.nat({ max: 5 }), (log, other, cut, step) => {
        const at = cut % (log.length + 1)
        // A shared start folded in pieces (as the browser folds its tail) so its index is layered.
        let shared: ChatState = { turns: [] }
        for (let i = 0; i < at; i += step + 1) shared = foldChat(log.slice(i, Math.min(at, i + step + 1)), shared)
        // Another tail from the same state first: its turns land in an index layer of their own.
        const renumbered = other.map((e, i) => ({ ...e, id: `x${i}`, index: at + i }) as ChatEvent)
        let elsewhere = shared
        for (const event of renumbered) elsewhere = foldChat([event], elsewhere)
        let state = shared
        for (let i = at; i < log.length; i += step + 1) state = foldChat(log.slice(i, i + step + 1), state)
        const reference = log.reduce(referenceReduce, { turns: [] } as ChatState)
        const elsewhereReference = [...log.slice(0, at), ...renumbered].reduce(referenceReduce, { turns: [] } as ChatState)
        expect(viaJson(state)).toEqual(viaJson(reference))
        expect(viaJson(elsewhere)).toEqual(viaJson(elsewhereReference))
        startsOfOpen(state, reference)
        startsOfOpen(elsewhere, elsewhereReference)
      }),
      { seed: SEED + 3, numRuns: RUNS },
    )
  })

  it('resumes from a JSON checkpoint at any index, never changing the state it started from', () => {
    fc.assert(
      fc.property(chatLog(80), fc.nat(), fc.nat(), (log, a, b) => {
        const [first, second] = [a % (log.length + 1), b % (log.length + 1)].sort((x, y) => x - y)
        const whole = viaJson(foldChat(log))
        const atFirst = foldChat(log.slice(0, first))
        const frozen = JSON.stringify(atFirst)
        const atSecond = foldChat(log.slice(first, second), viaJson(atFirst))
        expect(viaJson(foldChat(log.slice(second), viaJson(atSecond)))).toEqual(whole)
        // Folding on from a state (a page after a page) leaves that state as it was.
        foldChat(log.slice(first), atFirst)
        expect(JSON.stringify(atFirst)).toBe(frozen)
      }),
      { seed: SEED + 2, numRuns: RUNS },
    )
  })

  it('resumes from a checkpoint in blocks at any index past the first two blocks, and encodes each state as its JSON (kept blocks never stale)', () => {
    fc.assert(
      fc.property(chatLog(60), fc.boolean(), fc.nat(), fc.nat(), (generated, own, a, b) => {
        const log = onPrefix(generated, own)
        // The first cut after the prefix's first two blocks are full (event 768), anywhere up to the end.
        const first = 800 + (a % (log.length - 799))
        const second = first + (b % (log.length - first + 1))
        const whole = viaJson(log.slice(PREFIX.length).reduce(referenceReduce, PREFIX_REFERENCE))
        const atFirst = foldChat(log.slice(0, first))
        const frozen = JSON.stringify(atFirst)
        const read = viaPieces(atFirst)
        // A piece is one block: never more than 256 turns to make or to parse at once.
        expect(read.pieces.every((piece) => (JSON.parse(piece) as unknown[]).length <= 256)).toBe(true)
        expect(JSON.stringify(read.state)).toBe(frozen)
        const atSecond = foldChat(log.slice(first, second), read.state)
        // The blocks kept from the pieces it was read from, and from the fold before, are reused only where still true.
        expect(viaPieces(atSecond).pieces.flatMap((piece) => JSON.parse(piece) as unknown[])).toEqual(viaJson(atSecond).turns)
        const resumed = viaPieces(atSecond).state
        expect(viaJson(foldChat(log.slice(second), resumed))).toEqual(whole)
        startsOfOpen(foldChat(log.slice(second), resumed), log.slice(PREFIX.length).reduce(referenceReduce, PREFIX_REFERENCE))
        expect(JSON.stringify(atFirst)).toBe(frozen)
        expect(JSON.stringify(read.state)).toBe(frozen)
      }),
      { seed: SEED + 4, numRuns: RUNS },
    )
  })

  it('cuts an answer a Stop reaches after its end exactly where the same Stop while it streamed would, keeping the rest aside, from any checkpoint', () => {
    fc.assert(
      fc.property(
        chatLog(20),
        fc.array(hostileText, { minLength: 1, maxLength: 8 }),
        fc.nat(),
        fc.nat(),
        chatLog(10),
        (before, deltas, seen, cut, after) => {
          const at = (type: ChatEvent['type'], id: string, payload: unknown) => ({
            id,
            sessionId: 's',
            type,
            payload,
            createdAt: '2026-12-01T00:00:00.000Z',
          })
          const numbered = (events: object[]) => events.map((e, index) => ({ ...e, index }) as ChatEvent)
          const answer = [
            at('message', 'm', { text: 'q' }),
            at('generate', 'g', { for: 'm' }),
            ...deltas.map((delta, i) => at('chunk', `k${i}`, { of: 'g', attempt: 1, delta })),
          ]
          // The reader saw the answer's first `seen` chunks (none: up to its generate).
          const lastSeenIndex = before.length + 1 + (seen % (deltas.length + 1))
          const stop = at('cancelled', 'c', { of: 'g', lastSeenIndex })
          const tail = after.map((e, i) => ({ ...e, id: `t${i}` }))
          const late = numbered([...before, ...answer, at('finished', 'f', { of: 'g', attempt: 1, reason: 'stop' }), stop, ...tail])
          const inTime = numbered([...before, ...answer, stop, at('finished', 'f', { of: 'g', attempt: 1, reason: 'cancelled' }), ...tail])
          const g = (state: ChatState) => state.turns.find((t) => t.kind === 'assistant' && t.id === 'g') as AnswerTurn
          const state = foldChat(late)
          expect(viaJson(state)).toEqual(viaJson(late.reduce(referenceReduce, { turns: [] } as ChatState)))
          expect(answerText(g(state))).toBe(answerText(g(foldChat(inTime))))
          expect(answerText(g(state)) + answerRest(g(state))).toBe(deltas.join(''))
          expect(g(state).status).toBe(answerRest(g(state)) ? 'stopped' : 'done')
          const from = cut % (late.length + 1)
          expect(viaJson(foldChat(late.slice(from), viaPieces(foldChat(late.slice(0, from))).state))).toEqual(viaJson(state))
        },
      ),
      { seed: SEED + 5, numRuns: RUNS },
    )
  })
})

describe('an answer of mixed parts, cut by a Stop', () => {
  type Action =
    { kind: 'text' | 'reasoning' } | { kind: 'input' | 'call' | 'state'; call: 'call_a' | 'call_b'; state?: (typeof TOOL_CALL_STATES)[number] }
  const action: fc.Arbitrary<Action> = fc.oneof(
    fc.constantFrom({ kind: 'text' as const }, { kind: 'reasoning' as const }),
    fc.record({ kind: fc.constantFrom('input' as const, 'call' as const), call: fc.constantFrom('call_a' as const, 'call_b' as const) }),
    fc.record({
      kind: fc.constant('state' as const),
      call: fc.constantFrom('call_a' as const, 'call_b' as const),
      state: fc.constantFrom(...TOOL_CALL_STATES),
    }),
  )
  const at = (type: ChatEvent['type'], id: string, payload: unknown) => ({ id, sessionId: 's', type, payload, createdAt: '2026-12-01T00:00:00.000Z' })

  /** The answer's events as generate writes them: each call's `tool.call` once, its states only after it (the effect runs after the call is logged). */
  function answerEvents(actions: Action[]): object[] {
    const called = new Set<string>()
    const events: object[] = [at('message', 'm', { text: 'q' }), at('generate', 'g', { for: 'm' })]
    for (const [i, a] of actions.entries()) {
      const id = `p${i}`
      if (a.kind === 'text') events.push(at('chunk', id, { of: 'g', attempt: 1, delta: `t${i} ` }))
      else if (a.kind === 'reasoning') events.push(at('reasoning', id, { of: 'g', attempt: 1, delta: `r${i} ` }))
      else if (a.kind === 'input' && !called.has(a.call))
        events.push(at('tool.input', id, { of: 'g', attempt: 1, call: a.call, tool: 'sendWebhook', delta: `{${i}` }))
      else if (a.kind === 'call' && !called.has(a.call)) {
        called.add(a.call)
        events.push(at('tool.call', id, { of: 'g', attempt: 1, call: a.call, tool: 'sendWebhook', input: { message: a.call } }))
      } else if (a.kind === 'state' && called.has(a.call))
        events.push(at('tool.state', id, { of: 'g', call: a.call, tool: 'sendWebhook', state: a.state, input: { message: a.call }, result: i }))
    }
    return events
  }

  it('a Stop that lands after the answer finished cuts its parts where the tab that pressed it cut them (its Stop while it streamed), from any checkpoint', () => {
    fc.assert(
      fc.property(fc.array(action, { minLength: 1, maxLength: 30 }), fc.nat(), fc.nat(), fc.boolean(), (actions, seen, cut, fails) => {
        const answer = answerEvents(actions)
        // The reader saw up to event `lastSeenIndex` (at least the generate); the answer ended before their Stop reached the log.
        const lastSeenIndex = 1 + (seen % (answer.length - 1))
        const stop = at('cancelled', 'c', { of: 'g', lastSeenIndex })
        const end = fails
          ? at('a2.failed', 'f', { of: 'g', consumer: 'generate', attempts: 3, error: { code: 'X', message: 'upstream 500' } })
          : at('finished', 'f', { of: 'g', attempt: 1, reason: 'stop' })
        const log = [...answer, end, stop].map((e, index) => ({ ...e, index }) as ChatEvent)
        const refold = foldChat(log)
        expect(viaJson(refold)).toEqual(viaJson(log.reduce(referenceReduce, { turns: [] } as ChatState)))
        const from = cut % (log.length + 1)
        expect(viaJson(foldChat(log.slice(from), viaPieces(foldChat(log.slice(0, from))).state))).toEqual(viaJson(refold))

        // The tab that pressed Stop cut the answer while it streamed in its view, then caught up on the rest of the log.
        const optimistic = { ...(stop as object), index: -1 } as ChatEvent
        const tab = foldChat(
          log.filter((e) => e.index > lastSeenIndex && e.type !== 'cancelled'),
          foldChat([optimistic], foldChat(log.filter((e) => e.index <= lastSeenIndex))),
        )
        const g = (state: ChatState) => state.turns.find((t) => t.id === 'g') as AnswerTurn
        // Chunk ends are bookkeeping, not shown: a reader who saw it all leaves the answer as it finished, ends kept.
        const shownParts = (answer: AnswerTurn) =>
          JSON.parse(JSON.stringify(answer.parts.map((p) => ({ ...p, ends: undefined, inputEnds: undefined })))) as unknown
        expect(shownParts(g(refold))).toEqual(shownParts(g(tab)))
        expect(answerText(g(refold))).toBe(answerText(g(tab)))
        // Nothing the model streamed past the cut shows (the parts are compacted: their text is what the reader saw).
        const seenOf = (type: string, call?: string) =>
          log
            .filter((e) => e.index <= lastSeenIndex && e.type === type && (call === undefined || (e.payload as { call: string }).call === call))
            .map((e) => (e.payload as { delta: string }).delta)
            .join('')
        const shown = g(refold).parts
        expect(shown.flatMap((p) => (p.kind === 'reasoning' ? [p.text] : [])).join('')).toBe(seenOf('reasoning'))
        for (const part of shown) {
          if (part.kind !== 'tool') continue
          expect(part.inputText).toBe(seenOf('tool.input', part.call))
          expect(part.calledAt === undefined || part.calledAt <= lastSeenIndex).toBe(true)
        }
        // Every call whose state was written stays on screen.
        for (const e of log) if (e.type === 'tool.state') expect(shown.some((p) => p.kind === 'tool' && p.call === e.payload.call)).toBe(true)
      }),
      { seed: SEED + 7, numRuns: RUNS },
    )
  })

  it('the fold of the log equals what the tab that pressed Stop folded (its Stop first, the stragglers after), and shows nothing streamed past the cut', () => {
    fc.assert(
      fc.property(fc.array(action, { minLength: 1, maxLength: 30 }), fc.nat(), fc.nat(), fc.boolean(), (actions, seen, late, finishes) => {
        const answer = answerEvents(actions)
        // The reader saw up to event `lastSeenIndex` (at least the generate); the Stop lands `late` events after it.
        const lastSeenIndex = 1 + (seen % (answer.length - 1))
        const stopAt = lastSeenIndex + 1 + (late % (answer.length - lastSeenIndex))
        const stop = at('cancelled', 'c', { of: 'g', lastSeenIndex })
        const tail = finishes ? [at('finished', 'f', { of: 'g', attempt: 1, reason: 'cancelled' })] : []
        const log = [...answer.slice(0, stopAt), stop, ...answer.slice(stopAt), ...tail].map((e, index) => ({ ...e, index }) as ChatEvent)
        const refold = foldChat(log)
        expect(viaJson(refold)).toEqual(viaJson(log.reduce(referenceReduce, { turns: [] } as ChatState)))

        // The tab that pressed Stop: the log up to what it saw, its own Stop (not yet in the log: index -1), then the rest as it arrives.
        const seenPart = log.filter((e) => e.index <= lastSeenIndex)
        const optimistic = { ...(stop as object), index: -1 } as ChatEvent
        const arriving = log.filter((e) => e.index > lastSeenIndex && e.type !== 'cancelled')
        const tab = foldChat(arriving, foldChat([optimistic], foldChat(seenPart)))
        const g = (state: ChatState) => state.turns.find((t) => t.id === 'g') as AnswerTurn
        // `attempt` is bookkeeping for stragglers, not shown: the log's own order may fold one in before the cut.
        const view = ({ attempt: _attempt, ...shown }: AnswerTurn) => JSON.parse(JSON.stringify(shown)) as unknown
        expect(view(g(tab))).toEqual(view(g(refold)))

        // Nothing the model streamed past the cut shows; a tool call's known state does.
        const shown = g(refold)
        for (const part of shown.parts) {
          if (part.kind === 'reasoning') expect(part.chunks.every((c) => c.index <= lastSeenIndex)).toBe(true)
          else {
            expect(part.inputChunks.every((c) => c.index <= lastSeenIndex)).toBe(true)
            expect(part.calledAt === undefined || part.calledAt <= lastSeenIndex).toBe(true)
          }
        }
        // Every state written for a call is shown, cut or not: what happened outside the log is never hidden.
        for (const e of log) {
          if (e.type !== 'tool.state') continue
          const part = shown.parts.find((p) => p.kind === 'tool' && p.call === e.payload.call)
          expect(part).toBeDefined()
        }
        // What the reader saw of the reasoning stays.
        const seenReasoning = seenPart.filter((e) => e.type === 'reasoning').map((e) => (e.payload as { delta: string }).delta)
        const shownReasoning = shown.parts.flatMap((p) => (p.kind === 'reasoning' ? (p.chunks.length ? p.chunks.map((c) => c.delta) : [p.text]) : []))
        expect(shownReasoning.join('')).toBe(seenReasoning.join(''))
      }),
      { seed: SEED + 6, numRuns: RUNS },
    )
  })
})
