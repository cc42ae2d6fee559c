/**
 * A worker killed (`kill -9`) while a tool call's webhook POST is in flight: the next attempt
 * settles the call by asking the receiver through the effect's reconcile (lib/a2 §6), and the
 * answer shows what the stored effect says — done, or it did not happen — instead of "may have
 * happened" for a call that was settled. A real child process, a real webhook receiver, a real
 * upstream; on Postgres and on PGlite (a directory the next process opens, as after a crash).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storeForChild } from '@/test/child-store'
import { waitUntil } from '@/lib/a2/testing'
import { layers } from '@/test/db'
import { spawnChatWorker } from '@/test/chat-worker-process'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { startWebhookReceiver, type WebhookReceiver, type WebhookReceiverOptions } from '@/scripts/webhook-receiver'
import { buildChatServer } from '../server/chat-server'
import type { ChatEvent } from '../contract'
import { foldChat, type AnswerTurn, type ToolPart } from '../fold/reducer'

/** The generate consumer's lease: a run inside a call that is not overlapSafe is taken over only once it lapses (lib/a2 §9). */
const LEASE_MS = 15_000

describe.each(layers)('a worker killed mid-tool-call on %s', (kind) => {
  let upstream: Upstream
  beforeAll(async () => {
    upstream = await startUpstream({ tokenMs: 5, tokens: 20 })
  })
  afterAll(async () => {
    await upstream.close()
  })

  /**
   * A chat worker in a child process asks for a webhook call and is killed (`kill -9`) once the
   * POST reached the receiver; `then` gets this process's chat server on the same store (no
   * worker started yet), and everything is closed after it.
   */
  async function crashMidCall(
    receiverOptions: WebhookReceiverOptions,
    then: (world: {
      sessionId: string
      receiver: WebhookReceiver
      chat: ReturnType<typeof buildChatServer>
      read: () => Promise<ChatEvent[]>
    }) => Promise<void>,
  ): Promise<void> {
    const receiver = await startWebhookReceiver(receiverOptions)
    const place = await storeForChild(kind, 'a2-tool-crash-')
    let chat: ReturnType<typeof buildChatServer> | undefined
    try {
      const child = spawnChatWorker({
        store: place.location,
        upstream: upstream.url,
        webhook: receiver.url,
        ask: 'Tell the team [[call sendWebhook {"message":"deploy done"}]]',
        owner: 'kim',
      })
      const { sessionId } = await child.report('asked')
      // The POST is in flight (it reached the receiver): the worker dies holding the call.
      await waitUntil(() => receiver.arrived >= 1, 'the webhook POST to reach the receiver', 20_000)
      await child.kill()
      const store = await place.open()
      const opened = (chat = buildChatServer(store, { OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'upstream' }, receiver.url))
      const read = async () => (await opened.server.read(sessionId, 'kim', { limit: 10_000 })) as ChatEvent[]
      await then({ sessionId, receiver, chat: opened, read })
    } finally {
      await chat?.server.stopWorkers({ graceMs: 1000 })
      await place.close()
      await receiver.close()
    }
  }

  it.each([
    // The POST reached the receiver, which acted on it and holds its answer: the crash cut the sender off after the fact.
    { receiverHas: true, receiver: { holdMs: 60_000 }, shown: 'done', effect: 'DONE' },
    // The receiver queues its work; the sender died before it was accepted: it has no record. Its "not done" is no
    // proof for a killed owner's call (lib/a2 §6: liveness can be wrong, the call may still run), so the effect is
    // UNKNOWN, and the call says so, for an operator, until their verdict (operator-verdict.ts).
    { receiverHas: false, receiver: { acceptAfterMs: 60_000 }, shown: 'unknown', effect: 'UNKNOWN' },
  ] as Array<{ receiverHas: boolean; receiver: WebhookReceiverOptions; shown: string; effect: string }>)(
    'the receiver has the delivery: $receiverHas → the call shows $shown, from its effect ($effect)',
    ({ receiver: receiverOptions, shown, effect }) =>
      crashMidCall(receiverOptions, async ({ sessionId, receiver, chat, read }) => {
        await chat.server.startWorker({ pollMs: 50 })
        const [firstCall] = (await read()).filter((e) => e.type === 'tool.call')
        expect(firstCall?.type).toBe('tool.call')
        const call = (firstCall.payload as { call: string }).call
        // Settled: the call's state after 'running' is written, and the answer has its one `finished`.
        const log = await waitUntil(
          async () => {
            const events = await read()
            const states = events.filter((e) => e.type === 'tool.state' && e.payload.call === call).map((e) => (e.payload as { state: string }).state)
            return states.some((s) => s !== 'running') && events.some((e) => e.type === 'finished') ? events : undefined
          },
          'the crashed call to be settled from its effect, and the answer to finish',
          LEASE_MS + 20_000,
        )
        const answer = foldChat(log).turns.find((t) => t.kind === 'assistant') as AnswerTurn
        const part = answer.parts.find((p): p is ToolPart => p.kind === 'tool' && p.call === call)!
        expect(part.state).toBe(shown)
        if (shown === 'done') expect(part.result).toMatchObject({ status: 200, receipt: { received: true } })
        else expect(part.settle).toBe('operator')
        // What the chat shows is what the effect's record says.
        const [run] = await chat.server.operator.listRuns({ sessionIds: [sessionId] })
        const { effects } = await chat.server.operator.runDetail(run.id)
        expect(effects.find((e) => e.key === `tool:sendWebhook:${call}`)?.status).toBe(effect)
        // The receiver got the delivery once at most: the next attempt did not send it again under another key.
        expect(receiver.arrived).toBe(1)
        // The answer went on from the settled call: the model was told its outcome, and answered in text.
        expect(answer.status).toBe('done')
        expect(
          upstream.requests.at(-1)!.body.messages.some((m: { role: string; tool_call_id?: string }) => m.role === 'tool' && m.tool_call_id === call),
        ).toBe(true)
      }),
    LEASE_MS + 60_000,
  )

  it(
    'a Stop pressed while the killed worker held the call: the drain settles the run CANCELLED and the call shows done, from its effect',
    () =>
      crashMidCall({ holdMs: 60_000 }, async ({ sessionId, receiver, chat, read }) => {
        // The reader presses Stop with no worker alive: the dead owner's lease still holds the run, inside
        // the webhook call and the model call (overlapSafe) both.
        const before = await read()
        const generate = before.find((e) => e.type === 'generate')!
        await chat.server.push(sessionId, 'kim', {
          id: 'stop-while-dead',
          type: 'cancelled',
          payload: { of: generate.id, lastSeenIndex: before.at(-1)!.index },
        })
        await chat.server.startWorker({ pollMs: 50 })
        const log = await waitUntil(
          async () => {
            const events = await read()
            return events.some((e) => e.type === 'finished') ? events : undefined
          },
          'the drain to settle the stopped run and its ending to write finished',
          LEASE_MS + 20_000,
        )
        const [run] = await chat.server.operator.listRuns({ sessionIds: [sessionId] })
        expect(run.status).toBe('CANCELLED')
        const answer = foldChat(log).turns.find((t) => t.kind === 'assistant') as AnswerTurn
        expect(answer.status).toBe('stopped')
        const part = answer.parts.find((p): p is ToolPart => p.kind === 'tool')!
        expect(part.state).toBe('done')
        expect(receiver.arrived).toBe(1)
      }),
    LEASE_MS + 60_000,
  )
})
