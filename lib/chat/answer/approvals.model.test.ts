/**
 * The approval rules under every interleaving fast-check finds: an answer with two calls that
 * wait, and commands that race as they do in the app — approve or deny (with the call's
 * arguments or others, with the cancel version the page had, admitted on a read of the log that
 * may be a few events stale: a decision and a Stop racing through admission), a Stop, the
 * expiry sweep, a replayed decision, and the runs each event starts, run in any order (the
 * decision's continuation dispatching its approved calls one by one, a Stop landing between).
 *
 * It drives the app's own pieces on a log of real chat events: the reducer (foldChat), the
 * admission rule (refusalOfDecision) and the rule every run applies (waitEnding). The runtime's
 * part is modelled as the runtime guarantees it (lib/a2/README.md §5–6): a continuation's
 * dispatch is refused once a Stop is appended after its trigger (its abortOn bumps its
 * cancel_version; the dispatch compare-and-set sees it).
 *
 * Invariants after every command:
 *   1. a call is dispatched only if the log holds an approval of it, the first decision on it,
 *      for its exact arguments, with no Stop of the answer before that approval (the cancel
 *      version it was bound to is still current), and no Stop before the dispatch itself;
 *   2. never twice;
 *   3. a refused push wrote nothing;
 *   4. the answer has at most one `finished` (a Stop first: the sweep writes it), and once every run has run and the wait was ended
 *      (a Stop, or every call decided), exactly one.
 * Seeded and replayable: FC_SEED=… FC_PATH=…
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { ChatEvent } from '../contract'
import { foldChat } from '../fold/reducer'
import { answerOf, refusalOfDecision, waitEnding } from '../tools/approval-rule'
import { argsHash } from '../tools/approval-args'

const RUNS = Number(process.env.FC_RUNS ?? 300)
const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : 20261207
const PATH = process.env.FC_PATH

const CALLS = [
  { call: 'c1', input: { message: 'one' } },
  { call: 'c2', input: { message: 'two', to: ['a', 'b'] } },
]

type Command =
  | { kind: 'decide'; call: number; decision: 'approve' | 'deny'; rightArgs: boolean; version: 0 | 1; stale: number }
  | { kind: 'stop' }
  | { kind: 'expire'; call: number }
  | { kind: 'replay'; which: number; stale: number }
  | { kind: 'run'; which: number }
  | { kind: 'step'; which: number }

const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    kind: fc.constant('decide' as const),
    call: fc.nat(1),
    decision: fc.constantFrom('approve' as const, 'deny' as const),
    rightArgs: fc.boolean(),
    version: fc.constantFrom(0 as const, 1 as const),
    stale: fc.nat(3),
  }),
  fc.constant({ kind: 'stop' as const }),
  fc.record({ kind: fc.constant('expire' as const), call: fc.nat(1) }),
  fc.record({ kind: fc.constant('replay' as const), which: fc.nat(), stale: fc.nat(3) }),
  fc.record({ kind: fc.constant('run' as const), which: fc.nat() }),
  fc.record({ kind: fc.constant('step' as const), which: fc.nat() }),
)

/** A continuation in flight: the calls it still has to settle, in order. */
interface Continuation {
  trigger: ChatEvent
  pending: Array<{ call: string; decision: string }>
  ended: boolean
}

class World {
  log: ChatEvent[] = []
  jobs: ChatEvent[] = []
  continuations: Continuation[] = []
  dispatched: Array<{ call: string; at: number }> = []
  pushed: ChatEvent[] = []
  private ids = 0

  constructor() {
    this.append('message', { text: 'do both' }, 'm1')
    this.append('generate', { for: 'm1' }, 'g1')
    for (const { call, input } of CALLS) this.append('tool.call', { of: 'g1', attempt: 1, call, tool: 'test__deliver', input })
    for (const { call, input } of CALLS)
      this.append('tool.state', {
        of: 'g1',
        call,
        tool: 'test__deliver',
        state: 'awaiting-approval',
        input,
        approval: { server: 'test', args: argsHash(input), expiresAt: 1_000, answerIndex: 1 },
      })
  }

  append(type: ChatEvent['type'], payload: unknown, id = `e${++this.ids}`): ChatEvent {
    const event = { id, type, payload, index: this.log.length } as unknown as ChatEvent
    this.log.push(event)
    return event
  }

  answer(upTo = this.log.length) {
    return answerOf(foldChat(this.log.slice(0, upTo)), 'g1')
  }

  /** A browser's decision: admitted on a read `stale` events old (a race with what landed since), then appended at the head. */
  decide(payload: Extract<ChatEvent, { type: 'tool.decision' }>['payload'], stale: number): boolean {
    const read = Math.max(0, this.log.length - stale)
    if (refusalOfDecision(this.answer(read), payload, { argsHash, now: 0 })) return false
    // A retry under the same id would be a duplicate; a new id is a new event (the replay command re-pushes under a new one).
    const event = this.append('tool.decision', payload)
    this.pushed.push(event)
    this.jobs.push(event)
    return true
  }

  stop(): void {
    const event = this.append('cancelled', { of: 'g1', lastSeenIndex: this.log.length - 1 })
    this.jobs.push(event)
  }

  expire(call: number): void {
    // The sweep's query: a wait with no decision, no Stop and no finished after it.
    const { call: id, input } = CALLS[call]
    const after = this.log.filter(
      (e) =>
        (e.type === 'tool.decision' && e.payload.call === id) ||
        ((e.type === 'cancelled' || e.type === 'finished') && (e.payload as { of: string }).of === 'g1'),
    )
    if (after.length > 0) return
    this.jobs.push(this.append('tool.decision', { of: 'g1', call: id, decision: 'expired', args: argsHash(input), cancelVersion: 0 }))
  }

  /** A job's run: the rule on the log before its trigger. */
  run(which: number): void {
    if (this.jobs.length === 0) return
    const [trigger] = this.jobs.splice(which % this.jobs.length, 1)
    const ending = waitEnding(this.answer(trigger.index), trigger)
    if (ending.ends === 'stop') {
      for (const part of ending.calls) this.append('tool.state', { of: 'g1', call: part.call, tool: part.tool, state: 'not-started' })
      this.append('finished', { of: 'g1', attempt: 1, reason: 'cancelled' })
    } else if (ending.ends === 'decisions') {
      this.continuations.push({ trigger, pending: ending.calls.map((c) => ({ call: c.part.call, decision: c.decision })), ended: false })
    }
  }

  /** One step of a continuation: its next call settled (dispatched only while no Stop follows its trigger), or its end. */
  step(which: number): void {
    const open = this.continuations.filter((c) => !c.ended)
    if (open.length === 0) return
    const continuation = open[which % open.length]
    const stopped = this.log.some((e) => e.type === 'cancelled' && e.index > continuation.trigger.index)
    const next = continuation.pending.shift()
    if (next) {
      const state = next.decision === 'approve' ? (stopped ? 'not-started' : 'done') : next.decision === 'deny' ? 'denied' : 'expired'
      if (state === 'done') this.dispatched.push({ call: next.call, at: this.log.length })
      this.append('tool.state', { of: 'g1', call: next.call, tool: 'test__deliver', state })
      return
    }
    continuation.ended = true
    this.append('finished', { of: 'g1', attempt: 2, reason: stopped ? 'cancelled' : 'stop' })
  }
}

function checkInvariants(world: World): void {
  const { log } = world
  const firstStop = log.find((e) => e.type === 'cancelled')?.index ?? Infinity
  for (const { call, at } of world.dispatched) {
    const { input } = CALLS.find((c) => c.call === call)!
    const decisions = log.filter((e) => e.type === 'tool.decision' && e.payload.call === call)
    const first = decisions[0]
    // 1. the first decision on it approves its exact arguments, before any Stop; no Stop before the dispatch.
    expect(first?.payload).toMatchObject({ decision: 'approve', args: argsHash(input) })
    expect(first!.index).toBeLessThan(firstStop)
    expect(at).toBeLessThanOrEqual(firstStop)
  }
  // 2. never twice.
  const calls = world.dispatched.map((d) => d.call)
  expect(new Set(calls).size).toBe(calls.length)
  // 4. at most one finished.
  expect(log.filter((e) => e.type === 'finished').length).toBeLessThanOrEqual(1)
}

describe('approvals under interleavings (the chat’s rules on real events)', () => {
  it('never dispatches a call without an approval bound to its exact arguments and the current cancel version, and never twice', () => {
    let stoppedWhileWaiting = 0
    let dispatchedSome = 0
    let refusedStale = 0
    fc.assert(
      fc.property(fc.array(command, { minLength: 1, maxLength: 30 }), (commands) => {
        const world = new World()
        for (const c of commands) {
          const length = world.log.length
          if (c.kind === 'decide') {
            const { call, input } = CALLS[c.call]
            const payload = {
              of: 'g1',
              call,
              decision: c.decision,
              args: argsHash(c.rightArgs ? input : { ...input, message: 'other' }),
              cancelVersion: c.version,
            }
            // 3. refused: nothing written.
            if (!world.decide(payload, c.stale)) expect(world.log.length).toBe(length)
          } else if (c.kind === 'stop') {
            if (world.answer()?.parts.some((p) => p.kind === 'tool' && p.state === 'awaiting-approval' && !p.decided)) stoppedWhileWaiting++
            world.stop()
          } else if (c.kind === 'expire') world.expire(c.call)
          else if (c.kind === 'replay') {
            const earlier = world.pushed[c.which % Math.max(1, world.pushed.length)]
            if (earlier && !world.decide(earlier.payload as never, c.stale)) {
              expect(world.log.length).toBe(length)
              refusedStale++
            }
          } else if (c.kind === 'run') world.run(c.which)
          else world.step(c.which)
          checkInvariants(world)
        }
        // Drain: every run runs, every continuation ends.
        while (world.jobs.length > 0) world.run(0)
        while (world.continuations.some((c) => !c.ended)) world.step(0)
        checkInvariants(world)
        const ended =
          world.log.some((e) => e.type === 'cancelled') ||
          CALLS.every((c) => world.log.some((e) => e.type === 'tool.decision' && e.payload.call === c.call))
        expect(world.log.filter((e) => e.type === 'finished').length).toBe(ended ? 1 : 0)
        if (world.dispatched.length > 0) dispatchedSome++
      }),
      { numRuns: RUNS, seed: SEED, path: PATH, endOnFailure: true },
    )
    // The interesting cases were explored, not assumed.
    expect(stoppedWhileWaiting).toBeGreaterThan(0)
    expect(dispatchedSome).toBeGreaterThan(0)
    expect(refusedStale).toBeGreaterThan(0)
  })
})
