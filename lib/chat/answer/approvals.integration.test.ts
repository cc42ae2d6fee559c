/**
 * A tool call that needs approval (the MCP test server's destructive `deliver`, by the default
 * policy) waits as an event in the log, holding no worker, and a decision or a Stop ends it:
 * against a real upstream model and the real MCP test server over Streamable HTTP, and over stdio
 * (scripts/mcp-test-server.ts), on both stores. Pushes go through the chat's admission as the
 * events route makes them. What the server's own log says is the evidence of a dispatch.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { listRuns, waitUntil } from '@/lib/a2/testing'
import type { A2Server } from '@/lib/a2/server'
import { layers } from '@/test/db'
import { ask, logWhenFinished, useTestStore } from '@/test/chat'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { startMcpTestServer, type McpLogEntry, type McpTestServer } from '@/scripts/mcp-test-server'
import { mcpRegistry, type McpRegistry } from '@/lib/mcp/servers'
import type { McpServerConfig } from '@/lib/mcp/config'
import { stdioTestServer } from '@/test/mcp-stdio'
import { MCP_IDEMPOTENCY_META } from '@/lib/mcp/meta'
import { buildChatServer } from '../server/chat-server'
import { admitChatPush, referencedIds } from '../server/admission'
import type { Chat, ChatEvent } from '../contract'
import { foldChat, type AnswerTurn, type ToolPart } from '../fold/reducer'
import { argsHash } from '../tools/approval-args'
import { describeToolCall } from '../tools/tool-call'
import { sweepWaits } from './approval-expiry'
import { tokensSpentToday } from '../server/token-budget'

const ARGS = { message: 'ship it' }
const ASK = `Tell the team [[call test__deliver ${JSON.stringify(ARGS)}]]`

describe.each(layers)('a call that needs approval, on %s', (kind) => {
  const store = useTestStore(kind)
  let upstream: Upstream
  let mcp: McpTestServer | undefined
  /** What the MCP server received and wrote: the HTTP server's log in this process, or the stdio child's file. */
  let log: () => McpLogEntry[]
  let registry: McpRegistry
  let chat: ReturnType<typeof buildChatServer>

  beforeAll(async () => {
    upstream = await startUpstream({ tokenMs: 5, tokens: 10 })
  })
  afterEach(async () => {
    await chat?.server.stopWorkers({ graceMs: 1000 })
    await registry?.close()
    await mcp?.close()
    mcp = undefined
  })
  afterAll(async () => {
    await upstream.close()
  })

  async function start(transport: 'http' | 'stdio' = 'http'): Promise<A2Server<Chat>> {
    let config: McpServerConfig
    if (transport === 'http') {
      const http = (mcp = await startMcpTestServer({ holdMs: 0 }))
      config = { type: 'http', url: http.url }
      log = () => http.log
    } else {
      // The registry spawns the server itself, as the app does from `{ command, args }`.
      const stdio = stdioTestServer()
      config = stdio.config
      log = stdio.log
    }
    // The operator's default policy: a tool not marked read-only waits for approval.
    registry = mcpRegistry({ test: config })
    chat = buildChatServer(store(), { OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'upstream' }, undefined, {
      registry,
      offers: await registry.offers(),
    })
    await chat.server.startWorker({ pollMs: 50 })
    return chat.server
  }

  /** A push as the events route makes it: admitted by the chat's rules. */
  const push = (server: A2Server<Chat>, id: string, owner: string, body: unknown) =>
    server.push(id, owner, body, { refersTo: referencedIds, admit: (inputs, found) => admitChatPush(server, owner, inputs, found, { id }) })
  const read = async (server: A2Server<Chat>, id: string, owner: string) => (await server.read(id, owner, { limit: 10_000 })) as ChatEvent[]
  const answerIn = (events: ChatEvent[]) => foldChat(events).turns.find((t): t is AnswerTurn => t.kind === 'assistant')!
  const callIn = (events: ChatEvent[]) => answerIn(events).parts.find((p): p is ToolPart => p.kind === 'tool')!
  const toolCalls = () => log().filter((e) => e.type === 'received' && e.message.method === 'tools/call')
  const decision = (call: ToolPart, choice: 'approve' | 'deny', overrides: Record<string, unknown> = {}) => ({
    type: 'tool.decision',
    payload: { of: 'g1', call: call.call, decision: choice, args: argsHash(call.input), cancelVersion: 0, ...overrides },
  })

  /** Asks for the call and waits until it waits: the generate run is over, the call in the log with its wait. */
  async function waiting(server: A2Server<Chat>, owner: string): Promise<{ id: string; call: ToolPart }> {
    const id = await ask(server, owner, ASK)
    const events = await waitUntil(async () => {
      const log = await read(server, id, owner)
      return callIn(log)?.state === 'awaiting-approval' ? log : undefined
    }, 'the call to wait')
    // It holds no worker: the answer's run has ended (no `finished` yet), and nothing has reached the tool.
    await waitUntil(
      async () => (await listRuns(store(), { consumer: 'generate', sessionId: id })).every((r) => r.status === 'COMPLETED') || undefined,
      'the generate run to end',
    )
    expect(events.some((e) => e.type === 'finished')).toBe(false)
    expect(toolCalls()).toHaveLength(0)
    const call = callIn(events)
    expect(call).toMatchObject({ tool: 'test__deliver', input: ARGS, approval: { server: 'test', args: argsHash(ARGS) } })
    return { id, call }
  }

  it('approve: dispatched exactly once, with the effect’s key, and the answer goes on with its result', async () => {
    const server = await start()
    const { id, call } = await waiting(server, 'ada')
    await push(server, id, 'ada', { id: 'yes1', ...decision(call, 'approve') })
    const events = await logWhenFinished(server, id, 'ada')
    const answer = answerIn(events)
    expect(callIn(events)).toMatchObject({ state: 'done', decided: 'approve' })
    expect(answer.status).toBe('done')
    expect(answer.text.length).toBeGreaterThan(0)
    const writes = log().filter((e) => e.type === 'write')
    expect(writes).toHaveLength(1)
    expect(toolCalls()).toHaveLength(1)
    const key = (writes[0] as { key: string }).key
    expect(key).toMatch(/^a2-\d+-tool:test__deliver:/)
    expect((toolCalls()[0] as { message: { params: { _meta: Record<string, unknown> } } }).message.params._meta[MCP_IDEMPOTENCY_META]).toBe(key)
    expect(events.filter((e) => e.type === 'finished')).toHaveLength(1)
  })

  it('the model call that made the wait is spent at once: the daily budget counts it while the call waits, and the answer shows both calls’ tokens', async () => {
    const server = await start()
    const { id, call } = await waiting(server, 'bea')
    // That call wrote no `finished` (the answer is not over), and may never: a wait nobody decides still cost its tokens.
    const whileWaiting = (await tokensSpentToday(server.store.db, 'bea')).used
    expect(whileWaiting).toBeGreaterThan(0)
    await push(server, id, 'bea', { id: 'yes1', ...decision(call, 'approve') })
    const events = await logWhenFinished(server, id, 'bea')
    const finished = events.find((e): e is Extract<ChatEvent, { type: 'finished' }> => e.type === 'finished')!
    const continuation = (finished.payload.usage?.inputTokens ?? 0) + (finished.payload.usage?.outputTokens ?? 0)
    expect(continuation).toBeGreaterThan(0)
    expect((await tokensSpentToday(server.store.db, 'bea')).used).toBe(whileWaiting + continuation)
    const shown = answerIn(events).usage!
    expect(shown.inputTokens! + shown.outputTokens!).toBe(whileWaiting + continuation)
  })

  it('a restart while it waits: the wait is the log; a new process with no memory of it runs the approval', async () => {
    const first = await start()
    const { id, call } = await waiting(first, 'gus')
    // The process that asked goes away (its worker stopped, its MCP connections closed); nothing of the wait was in it.
    await first.stopWorkers({ graceMs: 1000 })
    await registry.close()
    registry = mcpRegistry({ test: { type: 'http', url: mcp!.url } })
    chat = buildChatServer(store(), { OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'upstream' }, undefined, {
      registry,
      offers: await registry.offers(),
    })
    await chat.server.startWorker({ pollMs: 50 })
    await push(chat.server, id, 'gus', { id: 'yes1', ...decision(call, 'approve') })
    const events = await logWhenFinished(chat.server, id, 'gus')
    expect(callIn(events).state).toBe('done')
    expect(log().filter((e) => e.type === 'write')).toHaveLength(1)
  })

  it('deny: never dispatched; the model is told it was denied and the answer goes on', async () => {
    const server = await start()
    const { id, call } = await waiting(server, 'bea')
    await push(server, id, 'bea', { id: 'no1', ...decision(call, 'deny') })
    const events = await logWhenFinished(server, id, 'bea')
    expect(callIn(events)).toMatchObject({ state: 'denied', decided: 'deny' })
    expect(answerIn(events).status).toBe('done')
    expect(toolCalls()).toHaveLength(0)
    // The model was asked again, with the call told as denied (the upstream's log of requests).
    const last = upstream.requests.at(-1)!.body as { messages: Array<{ role: string; content: unknown }> }
    expect(JSON.stringify(last.messages.find((m) => m.role === 'tool'))).toContain('denied')
  })

  it('Stop while waiting: the call is "Not started", the answer ends, nothing is dispatched, and a later approval is refused', async () => {
    const server = await start()
    const { id, call } = await waiting(server, 'cy')
    const seen = await read(server, id, 'cy')
    await push(server, id, 'cy', { id: 'stop1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex: seen.at(-1)!.index } })
    // Every tab's fold shows it at once: stopped, the call never ran.
    const folded = await read(server, id, 'cy')
    expect(answerIn(folded).status).toBe('stopped')
    expect(describeToolCall(callIn(folded), true).label).toBe('Not started')
    // The sweep writes what the log lacks, once, however many sweep.
    expect(await Promise.all([sweepWaits(server), sweepWaits(server)])).toEqual(expect.arrayContaining([{ expired: 0, stopped: 1 }]))
    expect(await sweepWaits(server)).toEqual({ expired: 0, stopped: 0 })
    const events = await logWhenFinished(server, id, 'cy')
    expect(events.filter((e) => e.type === 'finished')).toHaveLength(1)
    expect(callIn(events).state).toBe('not-started')
    expect(answerIn(events).status).toBe('stopped')
    expect(events.find((e) => e.type === 'finished')?.payload).toMatchObject({ reason: 'cancelled' })
    // An approval after the Stop (the page had not seen it: its cancelVersion 0) is refused and writes nothing.
    const before = (await read(server, id, 'cy')).length
    await expect(push(server, id, 'cy', { id: 'late1', ...decision(call, 'approve') })).rejects.toMatchObject({ code: 'conflict' })
    await expect(push(server, id, 'cy', { id: 'late2', ...decision(call, 'approve', { cancelVersion: 1 }) })).rejects.toMatchObject({
      code: 'conflict',
    })
    expect((await read(server, id, 'cy')).length).toBe(before)
    expect(toolCalls()).toHaveLength(0)
  })

  it('refused with a typed 4xx, nothing written: other arguments, replayed, by another account, an `expired` from a browser', async () => {
    const server = await start()
    const { id, call } = await waiting(server, 'dot')
    const length = async () => (await read(server, id, 'dot')).length
    const before = await length()
    await expect(
      push(server, id, 'dot', { id: 'x1', ...decision(call, 'approve', { args: argsHash({ message: 'rm -rf' }) }) }),
    ).rejects.toMatchObject({
      code: 'conflict',
    })
    await expect(push(server, id, 'dot', { id: 'x2', ...decision(call, 'approve', { decision: 'expired' }) })).rejects.toMatchObject({
      code: 'invalid_payload',
    })
    await expect(push(server, id, 'dot', { id: 'x3', ...decision(call, 'approve', { call: 'call_other' }) })).rejects.toMatchObject({
      code: 'invalid_reference',
    })
    await expect(push(server, id, 'eve', { id: 'x4', ...decision(call, 'approve') })).rejects.toMatchObject({ code: 'not_found' })
    expect(await length()).toBe(before)
    // The approval lands once; its replay under the same id is the same event (nothing written), under a new id refused.
    await push(server, id, 'dot', { id: 'ok1', ...decision(call, 'approve') })
    await logWhenFinished(server, id, 'dot')
    const after = await length()
    expect((await push(server, id, 'dot', { id: 'ok1', ...decision(call, 'approve') })).duplicate).toBe(true)
    await expect(push(server, id, 'dot', { id: 'ok2', ...decision(call, 'approve') })).rejects.toMatchObject({ code: 'conflict' })
    expect(await length()).toBe(after)
    expect(log().filter((e) => e.type === 'write')).toHaveLength(1)
  })

  it('expiry: a wait past its time is decided `expired` by the sweep, recorded; never dispatched, and the answer goes on', async () => {
    const server = await start()
    const { id, call } = await waiting(server, 'fay')
    // Not yet due: nothing.
    expect(await sweepWaits(server, call.approval!.expiresAt - 1)).toEqual({ expired: 0, stopped: 0 })
    expect(await sweepWaits(server, call.approval!.expiresAt)).toEqual({ expired: 1, stopped: 0 })
    // A second sweep finds it decided.
    expect(await sweepWaits(server, call.approval!.expiresAt)).toEqual({ expired: 0, stopped: 0 })
    const events = await logWhenFinished(server, id, 'fay')
    expect(events.filter((e) => e.type === 'tool.decision').map((e) => e.payload)).toEqual([
      expect.objectContaining({ decision: 'expired', call: call.call, args: argsHash(ARGS) }),
    ])
    expect(callIn(events).state).toBe('expired')
    expect(answerIn(events).status).toBe('done')
    expect(toolCalls()).toHaveLength(0)
    // A user's approval after it is refused.
    await expect(push(server, id, 'fay', { id: 'late', ...decision(call, 'approve') })).rejects.toMatchObject({ code: 'conflict' })
  })
  describe('over stdio (the registry spawns the server)', () => {
    it('approve: the call reaches the stdio server once, with the effect’s key, and is done', async () => {
      const server = await start('stdio')
      const { id, call } = await waiting(server, 'hal')
      await push(server, id, 'hal', { id: 'yes1', ...decision(call, 'approve') })
      const events = await logWhenFinished(server, id, 'hal')
      expect(callIn(events)).toMatchObject({ state: 'done', decided: 'approve' })
      expect(answerIn(events).status).toBe('done')
      const writes = log().filter((e) => e.type === 'write')
      expect(writes).toHaveLength(1)
      expect(toolCalls()).toHaveLength(1)
      expect((toolCalls()[0] as { message: { params: { _meta: Record<string, unknown> } } }).message.params._meta[MCP_IDEMPOTENCY_META]).toBe(
        (writes[0] as { key: string }).key,
      )
    })

    it('deny: the stdio server never receives the call', async () => {
      const server = await start('stdio')
      const { id, call } = await waiting(server, 'ida')
      await push(server, id, 'ida', { id: 'no1', ...decision(call, 'deny') })
      const events = await logWhenFinished(server, id, 'ida')
      expect(callIn(events)).toMatchObject({ state: 'denied', decided: 'deny' })
      expect(answerIn(events).status).toBe('done')
      // The server was up and listed its tools (its log has them), but no call reached it.
      expect(log().some((e) => e.type === 'received' && e.message.method === 'tools/list')).toBe(true)
      expect(toolCalls()).toHaveLength(0)
      expect(log().filter((e) => e.type === 'write')).toHaveLength(0)
    })
  })
})
