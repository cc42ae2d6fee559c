/**
 * An answer that calls an MCP server's tool, against a real upstream model and real MCP servers
 * (scripts/mcp-test-server.ts) over Streamable HTTP and over stdio, on both stores. Each outcome
 * is what the server's own log says: done with its result; a Stop mid-call reaches the server
 * (its response stream closed / `notifications/cancelled` with the request's id) and the call
 * shows what is known: a read-only tool → stopped, nothing to settle; a task → what `tasks/get`
 * says (cancelled, the server's word → did not happen); a plain destructive call, or one the
 * server finished anyway → may have happened (UNKNOWN), for an operator.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { waitForRun, waitUntil } from '@/lib/a2/testing'
import { layers } from '@/test/db'
import { ask, logWhenFinished, useTestStore } from '@/test/chat'
import { stdioTestServer } from '@/test/mcp-stdio'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { startMcpTestServer, type McpLogEntry, type McpTestServer } from '@/scripts/mcp-test-server'
import { mcpRegistry, type McpRegistry } from '@/lib/mcp/servers'
import type { McpServerConfig } from '@/lib/mcp/config'
import { MCP_IDEMPOTENCY_META } from '@/lib/mcp/meta'
import { buildChatServer } from '../server/chat-server'
import { mcpTool } from './kinds/mcp-tool'
import type { ChatEvent } from '../contract'
import { foldChat, type AnswerTurn, type ToolPart } from '../fold/reducer'

type Transport = 'http' | 'stdio'

describe.each(layers)('MCP tools in an answer on %s', (kind) => {
  const store = useTestStore(kind)
  let upstream: Upstream
  let chat: { chat: ReturnType<typeof buildChatServer>; log: () => McpLogEntry[] } | undefined
  const open: Array<{ close(): Promise<void> }> = []

  beforeAll(async () => {
    upstream = await startUpstream({ tokenMs: 10, tokens: 20 })
  })
  afterEach(async () => {
    await chat?.chat.server.stopWorkers({ graceMs: 1000 })
    for (const thing of open.splice(0).reverse()) await thing.close().catch(() => undefined)
    chat = undefined
  })
  afterAll(async () => {
    await upstream.close()
  })

  /** A chat server whose one MCP server ("test") holds each call `holdMs`, over `transport`. */
  async function start(transport: Transport, holdMs: number): Promise<NonNullable<typeof chat>> {
    let config: McpServerConfig
    let log: () => McpLogEntry[]
    if (transport === 'http') {
      const server: McpTestServer = await startMcpTestServer({ holdMs })
      open.push(server)
      config = { type: 'http', url: server.url }
      log = () => server.log
    } else {
      const stdio = stdioTestServer(holdMs)
      config = stdio.config
      log = stdio.log
    }
    // These calls run at once: the operator set `approval: "never"` (approvals.integration.test.ts has the waits).
    const registry: McpRegistry = mcpRegistry({ test: { ...config, approval: 'never' } })
    open.push(registry)
    const mcp = { registry, offers: await registry.offers() }
    const built = buildChatServer(store(), { OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'upstream' }, undefined, mcp)
    await built.server.startWorker({ pollMs: 50 })
    chat = { chat: built, log }
    return chat
  }
  const read = (sessionId: string, owner: string) => chat!.chat.server.read(sessionId, owner, { limit: 10_000 }) as Promise<ChatEvent[]>
  const callOf = (log: McpLogEntry[]) => log.find((e) => e.type === 'received' && e.message.method === 'tools/call')
  async function settledCall(sessionId: string, owner: string): Promise<ToolPart> {
    const log = await waitUntil(async () => {
      const events = await read(sessionId, owner)
      return events.some((e) => e.type === 'tool.state' && e.payload.state !== 'running') && events.some((e) => e.type === 'finished')
        ? events
        : undefined
    }, 'the call to settle')
    const answer = foldChat(log).turns.find((t) => t.kind === 'assistant') as AnswerTurn
    return answer.parts.find((p): p is ToolPart => p.kind === 'tool')!
  }

  describe.each<Transport>(['http', 'stdio'])('over %s', (transport) => {
    it('a tool that needs approval (the default for one not marked read-only) is offered to wait for it (answer/approvals.ts)', async () => {
      const registry = mcpRegistry({
        test:
          transport === 'http' ? { type: 'http', url: (await startMcpTestServer().then((s) => (open.push(s), s))).url } : stdioTestServer().config,
      })
      open.push(registry)
      const kinds = (await registry.offers()).map((offer) => mcpTool(offer, registry))
      expect(Object.fromEntries(kinds.map((k) => [k.name, k.approval ?? null]))).toEqual({
        test__lookup_writes: null,
        test__deliver: { server: 'test' },
        test__deliver_stubborn: { server: 'test' },
        test__deliver_task: { server: 'test' },
      })
      expect(kinds.every((k) => k.offered !== false)).toBe(true)
    })

    it('a call runs through its effect: the key in _meta is the effect’s, the server writes once, the call is done', async () => {
      const { chat: c, log } = await start(transport, 0)
      const id = await ask(c.server, 'ada', 'Tell the team [[call test__deliver {"message":"hello"}]]')
      await logWhenFinished(c.server, id, 'ada')
      const call = await settledCall(id, 'ada')
      expect(call).toMatchObject({ tool: 'test__deliver', input: { message: 'hello' }, state: 'done' })
      const writes = log().filter((e) => e.type === 'write')
      expect(writes).toHaveLength(1)
      expect((writes[0] as { key: string }).key).toMatch(/^a2-\d+-tool:test__deliver:call_/)
      expect((callOf(log()) as { message: { params: { _meta: Record<string, unknown> } } }).message.params._meta[MCP_IDEMPOTENCY_META]).toBe(
        (writes[0] as { key: string }).key,
      )
    })

    it.each([
      { tool: 'test__deliver', shown: 'unknown', run: 'UNKNOWN', written: false },
      { tool: 'test__lookup_writes', shown: 'cancelled', run: 'CANCELLED', written: false },
      { tool: 'test__deliver_task', shown: 'cancelled', run: 'CANCELLED', written: false },
      { tool: 'test__deliver_stubborn', shown: 'unknown', run: 'UNKNOWN', written: true },
    ] as const)('Stop mid-call of $tool: the server has the cancellation, the call shows $shown', async ({ tool, shown, run, written }) => {
      const { chat: c, log } = await start(transport, tool === 'test__deliver_stubborn' ? 1_500 : 30_000)
      const args = tool === 'test__lookup_writes' ? '{"limit":5}' : '{"message":"release is out"}'
      const id = await ask(c.server, 'dee', `Do it [[call ${tool} ${args}]]`)
      const received = await waitUntil(() => callOf(log()), 'the server to receive the call')
      const requestId = (received as Extract<McpLogEntry, { type: 'received' }>).message.id
      // A task: once the client polls it, the client holds its id (a Stop before that cannot name the task: unknown).
      if (tool === 'test__deliver_task')
        await waitUntil(() => log().some((e) => e.type === 'received' && e.message.method === 'tasks/get'), 'the task polled')
      const seen = await read(id, 'dee')
      await c.server.push(id, 'dee', { id: 'stop1', type: 'cancelled', payload: { of: 'g1', lastSeenIndex: seen.at(-1)!.index } })
      if (tool === 'test__deliver_task') {
        await waitUntil(() => log().some((e) => e.type === 'received' && e.message.method === 'tasks/cancel'), 'tasks/cancel at the server')
      } else if (transport === 'http') {
        await waitUntil(() => log().some((e) => e.type === 'stream-closed' && e.ids.includes(requestId!)), 'the call’s response stream to close')
      } else {
        await waitUntil(
          () =>
            log().some((e) => e.type === 'received' && e.message.method === 'notifications/cancelled' && e.message.params?.requestId === requestId),
          'notifications/cancelled with the request id',
        )
      }
      await waitForRun(store(), { sessionId: id, eventId: 'g1', consumer: 'generate' }, run)
      const call = await settledCall(id, 'dee')
      expect(call).toMatchObject({ tool, state: shown })
      if (shown === 'unknown') expect(call.settle).toBe('operator')
      if (written) await waitUntil(() => log().some((e) => e.type === 'write'), 'the stubborn server’s write')
      else expect(log().some((e) => e.type === 'write')).toBe(false)
    })
  })
})
