/**
 * A Stop at any point of an answer that reasons and calls a side-effecting tool, drawn by
 * fast-check (seeded): before the reasoning, in it, in the tool's input, between the call and
 * its dispatch, while the webhook POST is in flight, after it, in the text, after the end.
 * The offline model (what `npm run dev` runs) streams the parts; the sendWebhook tool posts to
 * a real local receiver. Whatever the moment: nothing the model streamed is admitted after the
 * Stop, the answer has exactly one `finished`, and the call's state is honest — never failed,
 * done whenever the receiver has the delivery, never done when it has not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { layers } from '@/test/db'
import { useTestStore } from '@/test/chat'
import { startWebhookReceiver, type WebhookReceiver } from '@/scripts/webhook-receiver'
import { waitForRun, waitUntil } from '@/lib/a2/testing'
import { buildChatServer } from '../server/chat-server'
import type { ChatEvent } from '../contract'
import { foldChat, type AnswerTurn, type ToolPart } from '../fold/reducer'

const STEPS = new Set(['chunk', 'reasoning', 'tool.input', 'tool.call'])
const RUNS = Number(process.env.FC_RUNS_INTEGRATION || 16)

/** When the reader presses Stop: once the log holds `count` events of a kind (a running call: its state). */
type Moment = { type: 'generate' | 'reasoning' | 'tool.input' | 'tool.call' | 'running' | 'chunk' | 'finished'; count: number }
const moment: fc.Arbitrary<Moment> = fc.oneof(
  fc.record({ type: fc.constant('generate' as const), count: fc.constant(1) }),
  fc.record({ type: fc.constant('reasoning' as const), count: fc.integer({ min: 1, max: 30 }) }),
  fc.record({ type: fc.constant('tool.input' as const), count: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ type: fc.constantFrom('tool.call' as const, 'running' as const), count: fc.constant(1) }),
  fc.record({ type: fc.constant('chunk' as const), count: fc.integer({ min: 1, max: 10 }) }),
  fc.record({ type: fc.constant('finished' as const), count: fc.constant(1) }),
)
function reached(events: ChatEvent[], { type, count }: Moment): boolean {
  const matching = events.filter((e) => (type === 'running' ? e.type === 'tool.state' && e.payload.state === 'running' : e.type === type))
  return matching.length >= count
}

describe.each(layers)('a Stop anywhere in an answer of parts on %s', (kind) => {
  const store = useTestStore(kind)
  let receiver: WebhookReceiver
  let chat: ReturnType<typeof buildChatServer>

  beforeAll(async () => {
    // 150 ms per delivery: long enough that some Stops land mid-call.
    receiver = await startWebhookReceiver({ holdMs: 150 })
    chat = buildChatServer(store(), { OFFLINE_MS_PER_TOKEN: 4 }, receiver.url)
    await chat.server.startWorker({ pollMs: 50 })
  })
  afterAll(async () => {
    await chat.server.stopWorkers({ graceMs: 1000 })
    await receiver.close()
  })

  it('the offline model answers "think, then tell the team" with reasoning, a delivered tool call and text', async () => {
    const { server } = chat
    const { id } = await server.sessions.create('eve')
    await server.push(id, 'eve', {
      events: [
        { id: 'm1', type: 'message', payload: { text: 'Think first, then tell the team: the release is out' } },
        { id: 'g1', type: 'generate', payload: { for: 'm1' } },
      ],
    })
    const log = await waitUntil(async () => {
      const events = (await server.read(id, 'eve', { limit: 10_000 })) as ChatEvent[]
      return events.some((e) => e.type === 'finished') ? events : undefined
    }, 'the answer to finish')
    const answer = foldChat(log).turns[1] as AnswerTurn
    expect(answer.status).toBe('done')
    expect(answer.parts.map((p) => p.kind)).toEqual(['reasoning', 'tool'])
    expect(answer.parts[1]).toMatchObject({ tool: 'sendWebhook', state: 'done', input: { message: 'the release is out' } })
    expect(answer.text).toContain('Sent to the team webhook')
  })

  it('holds for a Stop at a drawn moment: before the reasoning, in it, in the tool input, at the call, mid-call, in the text, after the end', async () => {
    const { server } = chat
    let session = 0
    await fc.assert(
      fc.asyncProperty(moment, async (after) => {
        const owner = `stop-${session++}`
        const { id } = await server.sessions.create(owner)
        const delivered = new Set(receiver.received.keys())
        await server.push(id, owner, {
          events: [
            { id: 'm1', type: 'message', payload: { text: `Think first, then tell the team: build ${session} is green` } },
            { id: 'g1', type: 'generate', payload: { for: 'm1' } },
          ],
        })
        const read = async () => (await server.read(id, owner, { limit: 10_000 })) as ChatEvent[]
        const seen = await waitUntil(
          async () => {
            const events = await read()
            return reached(events, after) || events.some((e) => e.type === 'finished') ? events : undefined
          },
          `the answer to reach ${JSON.stringify(after)}`,
        )
        const lastSeenIndex = seen.at(-1)!.index
        await server.push(id, owner, { id: 'stop', type: 'cancelled', payload: { of: 'g1', lastSeenIndex } })
        await waitForRun(store(), { sessionId: id, eventId: 'g1', consumer: 'generate' }, ['CANCELLED', 'COMPLETED'])
        const log = await waitUntil(async () => {
          const events = await read()
          return events.some((e) => e.type === 'finished') ? events : undefined
        }, 'its finished')

        const cancel = log.find((e) => e.type === 'cancelled')!
        expect(log.filter((e) => STEPS.has(e.type) && e.index > cancel.index)).toEqual([])
        expect(log.filter((e) => e.type === 'finished')).toHaveLength(1)

        const states = log.filter((e): e is Extract<ChatEvent, { type: 'tool.state' }> => e.type === 'tool.state').map((e) => e.payload.state)
        expect(states).not.toContain('failed')
        const key = [...receiver.received.keys()].find((k) => !delivered.has(k) && JSON.stringify(receiver.received.get(k)).includes(id))
        const call = (foldChat(log).turns[1] as AnswerTurn).parts.find((p): p is ToolPart => p.kind === 'tool')
        // The receiver has it: the call says done (or may have happened). It has not: never done.
        if (key) expect(['done', 'unknown']).toContain(call?.state)
        else expect(call?.state).not.toBe('done')
        // Dispatched only if its call was logged before the Stop.
        if (key) expect(log.find((e) => e.type === 'tool.call')!.index).toBeLessThan(cancel.index)
      }),
      { seed: 20261203, numRuns: RUNS },
    )
  })
})
