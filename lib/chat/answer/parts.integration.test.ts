/**
 * Answers made of parts, below the browser: a real upstream streaming OpenAI-compatible SSE
 * (`reasoning_content`, `tool_calls` with the arguments in fragments), the generate consumer on
 * a worker, the sendWebhook tool delivering to a real local HTTP receiver, the log on PGlite
 * and Postgres. A Stop mid-reasoning, mid-tool-input and mid-tool-call keeps what the reader
 * saw, closes the requests it cut off, and shows each tool call's honest state.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { layers } from '@/test/db'
import { ask, logWhenFinished, useTestStore } from '@/test/chat'
import { startUpstream, REASONING, type Upstream } from '@/scripts/upstream-server'
import { startWebhookReceiver, type WebhookReceiver, type WebhookReceiverOptions } from '@/scripts/webhook-receiver'
import { waitForRun, waitUntil } from '@/lib/a2/testing'
import { countText } from '@/lib/ai/usage'
import { buildChatServer } from '../server/chat-server'
import type { ChatEvent } from '../contract'
import { answerText, foldChat, type AnswerTurn, type ToolPart } from '../fold/reducer'
import { partText, toolPhase } from '../fold/parts'

/** Reasoning long enough to be stopped in the middle: 400 words at 10 ms each. */
const LONG_REASONING = 'Let me think this through step by step before I answer. '.repeat(40)
/** A call whose arguments stream in 5-character fragments: ~80 of them. */
const LONG_CALL = `[[call sendWebhook {"message":"${'deploy finished on every host '.repeat(13)}"}]]`

describe.each(layers)('answers made of parts against a real upstream on %s', (kind) => {
  const store = useTestStore(kind)
  let upstream: Upstream
  let receiver: WebhookReceiver | undefined
  let chat: ReturnType<typeof buildChatServer> | undefined

  beforeAll(async () => {
    upstream = await startUpstream({
      tokenMs: 10,
      tokens: 30,
      reasoning: (body) =>
        JSON.stringify(body).includes('[[long reasons]]') ? LONG_REASONING : JSON.stringify(body).includes('[[reasons]]') ? REASONING : undefined,
    })
  })
  afterEach(async () => {
    await chat?.server.stopWorkers({ graceMs: 1000 })
    await receiver?.close()
    chat = receiver = undefined
  })
  afterAll(async () => {
    await upstream.close()
  })

  async function start(receiverOptions: WebhookReceiverOptions = {}) {
    receiver = await startWebhookReceiver(receiverOptions)
    chat = buildChatServer(store(), { OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'upstream' }, receiver.url)
    await chat.server.startWorker({ pollMs: 50 })
    return chat.server
  }
  const answerOf = (log: ChatEvent[]) => foldChat(log).turns.find((t) => t.kind === 'assistant') as AnswerTurn
  const read = (sessionId: string, owner: string) => chat!.server.read(sessionId, owner, { limit: 10_000 }) as Promise<ChatEvent[]>
  /** The reader presses Stop having seen the log up to its last event now. */
  async function stopAfter(
    sessionId: string,
    owner: string,
    seen: (log: ChatEvent[]) => boolean,
  ): Promise<{ seen: ChatEvent[]; lastSeenIndex: number }> {
    const log = await waitUntil(async () => {
      const events = await read(sessionId, owner)
      return seen(events) ? events : undefined
    }, 'the moment to press Stop')
    const lastSeenIndex = log.at(-1)!.index
    await chat!.server.push(sessionId, owner, { id: 'stop1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex } })
    return { seen: log, lastSeenIndex }
  }

  it('reasoning deltas and a tool call whose arguments stream in fragments: folded into ordered parts, the webhook delivered once', async () => {
    const server = await start()
    const id = await ask(server, 'ada', 'Tell the team [[reasons]] [[call sendWebhook {"message":"hello team"}]]')
    const log = await logWhenFinished(server, id, 'ada')
    const answer = answerOf(log)
    expect(answer.status).toBe('done')
    // Each of the two model calls (the call, then the answer after its result) reasoned first: parts in log order.
    expect(answer.parts.map((p) => p.kind)).toEqual(['reasoning', 'tool', 'reasoning'])
    expect(partText(answer.parts[0])).toBe(REASONING)
    const call = answer.parts[1] as ToolPart
    expect(call).toMatchObject({ tool: 'sendWebhook', input: { message: 'hello team' }, state: 'done' })
    // The arguments came in fragments (5 characters each), one tool.input event or more each, joined back whole.
    expect(partText(call)).toBe('{"message":"hello team"}')
    expect(log.filter((e) => e.type === 'tool.input').length).toBeGreaterThan(0)
    expect(log.map((e) => e.type)).toContain('tool.call')
    expect([...receiver!.received.values()]).toEqual([{ message: 'hello team', session: id, answer: 'g1' }])
    const [key] = receiver!.received.keys()
    expect(key).toMatch(/^a2-\d+-tool:sendWebhook:/)
    // The second request carried the tool's result; the text answer followed.
    expect(upstream.requests.at(-1)!.body.messages.some((m: { role: string }) => m.role === 'tool')).toBe(true)
    expect(answerText(answer)).toContain('tok0')
  })

  it('a later turn sends the earlier answer’s tool call and its result to the model, in OpenAI’s wire format', async () => {
    const server = await start()
    const id = await ask(server, 'eve', 'Tell the team [[reasons]] [[call sendWebhook {"message":"ship it"}]]')
    const first = answerOf(await logWhenFinished(server, id, 'eve'))
    const call = first.parts.find((p): p is ToolPart => p.kind === 'tool')!
    expect(call.state).toBe('done')
    await server.push(id, 'eve', {
      events: [
        { id: 'm2', type: 'message', payload: { text: 'did it go out?', after: 'g1' } },
        { id: 'g2', type: 'generate', payload: { for: 'm2' } },
      ],
    })
    await waitUntil(async () => (await read(id, 'eve')).some((e) => e.type === 'finished' && e.payload.of === 'g2'), 'the second answer')
    const request = upstream.requests.find((r) => r.body.messages.at(-1)?.content === 'did it go out?')!
    const messages = request.body.messages as Array<{ role: string; content?: unknown; tool_calls?: unknown; tool_call_id?: string }>
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user'])
    expect(messages[2].tool_calls).toEqual([
      { id: call.call, type: 'function', function: { name: 'sendWebhook', arguments: JSON.stringify({ message: 'ship it' }) } },
    ])
    expect(messages[3]).toMatchObject({ role: 'tool', tool_call_id: call.call })
    expect(JSON.parse(messages[3].content as string)).toEqual(JSON.parse(JSON.stringify(call.result)))
    expect(messages[4]).toEqual({ role: 'assistant', content: answerText(first) })
    // The reasoning the model streamed is not sent back.
    expect(JSON.stringify(messages)).not.toContain(REASONING.trim())
  })

  it('Stop mid-reasoning: what the reader saw of the reasoning stays, nothing past it; the request closes; the reasoning streamed is billed', async () => {
    const server = await start()
    const id = await ask(server, 'bea', 'Ponder [[long reasons]]')
    const { seen } = await stopAfter(id, 'bea', (log) => log.filter((e) => e.type === 'reasoning').length >= 5)
    const request = upstream.requests.at(-1)!
    await request.closed
    expect(request.closedEarly).toBe(true)
    await waitForRun(store(), { sessionId: id, eventId: 'g1', consumer: 'generate' }, 'CANCELLED')
    const log = await logWhenFinished(server, id, 'bea')
    const answer = answerOf(log)
    expect(answer.status).toBe('stopped')
    const seenReasoning = seen.filter((e) => e.type === 'reasoning').map((e) => (e.payload as { delta: string }).delta)
    expect(answer.parts.map(partText)).toEqual([seenReasoning.join('')])
    expect(answerText(answer)).toBe('')
    const cancel = log.find((e) => e.type === 'cancelled')!
    expect(log.filter((e) => e.type === 'reasoning' && e.index > cancel.index)).toEqual([])
    // Every reasoning token the model streamed is counted (no usage chunk reaches an aborted request).
    const finished = log.find((e) => e.type === 'finished')!.payload as { usage: { outputTokens: number; counted?: true } }
    const streamedReasoning = log.filter((e) => e.type === 'reasoning').map((e) => (e.payload as { delta: string }).delta)
    expect(finished.usage.counted).toBe(true)
    expect(finished.usage.outputTokens).toBeGreaterThanOrEqual(countText(streamedReasoning.join('')))
    expect(finished.usage.outputTokens).toBeGreaterThan(0)
  })

  it('Stop mid-tool-input: the input seen so far stays, the call is never made, the webhook never sees a POST', async () => {
    const server = await start()
    const id = await ask(server, 'cy', `Announce it ${LONG_CALL}`)
    const { seen } = await stopAfter(id, 'cy', (log) => log.filter((e) => e.type === 'tool.input').length >= 3)
    await waitForRun(store(), { sessionId: id, eventId: 'g1', consumer: 'generate' }, 'CANCELLED')
    const log = await logWhenFinished(server, id, 'cy')
    expect(log.some((e) => e.type === 'tool.call')).toBe(false)
    const answer = answerOf(log)
    const [call] = answer.parts as ToolPart[]
    const seenInput = seen.filter((e) => e.type === 'tool.input').map((e) => (e.payload as { delta: string }).delta)
    expect(partText(call)).toBe(seenInput.join(''))
    expect(toolPhase(call)).toBe('input')
    expect(receiver!.received.size).toBe(0)
    expect(receiver!.abandoned).toBe(0)
  })

  it.each([
    { receiverSaw: true, options: { holdMs: 60_000 }, shown: 'done', run: 'CANCELLED' },
    { receiverSaw: false, options: { acceptAfterMs: 60_000 }, shown: 'cancelled', run: 'CANCELLED' },
    { receiverSaw: true, options: { holdMs: 60_000, askStatus: 503 }, shown: 'unknown', run: 'UNKNOWN' },
  ] as const)(
    'Stop mid-tool-call, the receiver having seen the POST: $receiverSaw, able to say: $options.askStatus: the request is aborted and the call shows $shown',
    async ({ receiverSaw, options, shown, run }) => {
      const server = await start(options)
      const id = await ask(server, 'dee', 'Tell them [[call sendWebhook {"message":"release is out"}]]')
      // Stop while the POST is at the receiver: acted on (recorded) or still queued there.
      await stopAfter(
        id,
        'dee',
        (log) =>
          log.some((e) => e.type === 'tool.state' && e.payload.state === 'running') &&
          receiver!.arrived === 1 &&
          receiver!.received.size === (receiverSaw ? 1 : 0),
      )
      await waitForRun(store(), { sessionId: id, eventId: 'g1', consumer: 'generate' }, run)
      // The tool's own request was closed by the Stop (the receiver saw its sender go).
      await waitUntil(() => receiver!.abandoned === 1, `the webhook request to be abandoned (${receiver!.abandoned} so far)`)
      expect(receiver!.received.size).toBe(receiverSaw ? 1 : 0)
      const log = await waitUntil(async () => {
        const events = await read(id, 'dee')
        return events.some((e) => e.type === 'tool.state' && e.payload.state !== 'running') && events.some((e) => e.type === 'finished')
          ? events
          : undefined
      }, 'the call to settle')
      const [call] = answerOf(log).parts as ToolPart[]
      expect(call).toMatchObject({ tool: 'sendWebhook', input: { message: 'release is out' }, state: shown })
      if (shown === 'unknown') expect(call.settle).toBe('operator')
      expect(answerOf(log).status).toBe('stopped')
    },
  )
})
