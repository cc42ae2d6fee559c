/**
 * Continue after a Stop that came after a tool call was done (issue 36, item 4): the
 * continuation request tells the model of the call and its result as the reader saw them, as a
 * later turn does, so a model does not make it again; the continued version shows the call; a
 * server that starts over has its restatement dropped (no text twice); the receiver counts one POST.
 * Against the real chat-completions SSE server (one that restarts instead of continuing) and the
 * real webhook receiver, on both stores.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { layers } from '@/test/db'
import { ask, useTestStore } from '@/test/chat'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { startWebhookReceiver, type WebhookReceiver } from '@/scripts/webhook-receiver'
import { waitForRun, waitUntil } from '@/lib/a2/testing'
import { buildChatServer } from '../server/chat-server'
import type { ChatEvent } from '../contract'
import { foldChat, type AnswerTurn, type ToolPart } from '../fold/reducer'

const TOKENS = 40
const fullText = Array.from({ length: TOKENS }, (_, i) => `tok${i} `).join('')

describe.each(layers)('Continue after a tool answer against a server that starts over, on %s', (kind) => {
  const store = useTestStore(kind)
  let upstream: Upstream
  let receiver: WebhookReceiver
  let chat: ReturnType<typeof buildChatServer>

  beforeAll(async () => {
    upstream = await startUpstream({ tokenMs: 15, tokens: TOKENS, continuation: 'restart' })
  })
  afterEach(async () => {
    await chat?.server.stopWorkers({ graceMs: 1000 })
    await receiver?.close()
  })
  afterAll(() => upstream.close())

  it('sends the call and its result, shows the call in the continued version, no text twice, one POST', async () => {
    receiver = await startWebhookReceiver()
    chat = buildChatServer(store(), { OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'upstream' }, receiver.url)
    const { server } = chat
    await server.startWorker({ pollMs: 50 })
    const owner = 'cleo'
    const id = await ask(server, owner, 'Tell the team [[call sendWebhook {"message":"shipped"}]]')
    const read = async () => (await server.read(id, owner, { limit: 10_000 })) as ChatEvent[]

    // Stop once the call is done and some of the text after it was shown.
    const seen = await waitUntil(async () => {
      const log = await read()
      const done = log.some((e) => e.type === 'tool.state' && e.payload.state === 'done')
      return done && log.filter((e) => e.type === 'chunk').length >= 4 ? log : undefined
    }, 'the call done and text after it')
    await server.push(id, owner, { id: 'stop1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex: seen.at(-1)!.index } })
    await waitForRun(store(), { sessionId: id, eventId: 'g1', consumer: 'generate' }, ['CANCELLED', 'COMPLETED'])
    const stopped = foldChat(await read()).turns.find((t) => t.id === 'g1') as AnswerTurn
    const call = stopped.parts.find((p): p is ToolPart => p.kind === 'tool')!
    expect(call.state).toBe('done')
    expect(stopped.text.length).toBeGreaterThan(0)
    const requestsBefore = upstream.requests.length

    await server.push(id, owner, { id: 'g2', type: 'generate', payload: { for: 'm1', continues: 'g1' } })
    const log = await waitUntil(async () => {
      const events = await read()
      return events.some((e) => e.type === 'finished' && e.payload.of === 'g2') ? events : undefined
    }, 'the continuation to finish')

    // The continuation request told the model of the call and what it returned.
    const continuation = upstream.requests[requestsBefore]!
    const messages = (continuation.body as { messages: { role: string; tool_call_id?: string; tool_calls?: { id: string }[] }[] }).messages
    expect(messages.some((m) => m.role === 'assistant' && m.tool_calls?.some((c) => c.id === call.call))).toBe(true)
    expect(messages.some((m) => m.role === 'tool' && m.tool_call_id === call.call)).toBe(true)
    // So it made no call again: one POST, one delivery.
    expect(receiver.arrived).toBe(1)
    expect(receiver.received.size).toBe(1)

    const continued = foldChat(log).turns.find((t) => t.id === 'g2') as AnswerTurn
    expect(continued.status).toBe('done')
    // The continued version shows the call that happened, and only it.
    expect(continued.parts.filter((p) => p.kind === 'tool')).toEqual([expect.objectContaining({ call: call.call, state: 'done' })])
    // No text twice: the server's restatement of the answer so far was dropped.
    expect(continued.prefix! + continued.text).toBe(fullText)
    expect(continued.prefix! + continued.text).not.toMatch(/(tok0 ).*\1/)
  })
})
