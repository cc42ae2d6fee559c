/**
 * A worker killed (`kill -9`) while a call waits for approval: the wait is the log alone (its
 * generate run had ended, holding no worker), so it survives; the user's approval lands while no
 * worker lives, and a successor process with no memory of the wait continues the answer and runs
 * the call exactly once. A real child process, a real upstream, the real MCP test server over
 * Streamable HTTP (its log is the evidence of a dispatch); on Postgres and on PGlite (a directory
 * the next process opens, as after a crash).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storeForChild } from '@/test/child-store'
import type { A2Server } from '@/lib/a2/server'
import { layers } from '@/test/db'
import { logWhenFinished } from '@/test/chat'
import { spawnChatWorker } from '@/test/chat-worker-process'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { startMcpTestServer, type McpTestServer } from '@/scripts/mcp-test-server'
import { mcpRegistry, type McpRegistry } from '@/lib/mcp/servers'
import { buildChatServer } from '../server/chat-server'
import { admitChatPush, referencedIds } from '../server/admission'
import type { Chat, ChatEvent } from '../contract'
import { foldChat, type AnswerTurn, type ToolPart } from '../fold/reducer'
import { argsHash } from '../tools/approval-args'

const ARGS = { message: 'the release is out' }

describe.each(layers)('a worker killed while a call waits for approval, on %s', (kind) => {
  let upstream: Upstream
  beforeAll(async () => {
    upstream = await startUpstream({ tokenMs: 5, tokens: 10 })
  })
  afterAll(async () => {
    await upstream.close()
  })

  it('the wait survives; approved with no worker alive, a successor runs the call exactly once and the answer ends', async () => {
    const mcp: McpTestServer = await startMcpTestServer({ holdMs: 0 })
    const place = await storeForChild(kind, 'a2-approval-crash-')
    let registry: McpRegistry | undefined
    let server: A2Server<Chat> | undefined
    try {
      const child = spawnChatWorker({
        store: place.location,
        upstream: upstream.url,
        webhook: '',
        ask: `Tell the team [[call test__deliver ${JSON.stringify(ARGS)}]]`,
        owner: 'kim',
        // The operator's default policy: `deliver` (not read-only) waits for approval.
        mcpServers: { test: { url: mcp.url } },
        approval: 'report',
      })
      const { sessionId } = await child.report('waiting')
      await child.kill()

      const store = await place.open()
      registry = mcpRegistry({ test: { type: 'http', url: mcp.url } })
      const chat = buildChatServer(store, { OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'upstream' }, undefined, {
        registry,
        offers: await registry.offers(),
      })
      server = chat.server
      const read = async () => (await chat.server.read(sessionId, 'kim', { limit: 10_000 })) as ChatEvent[]
      const callIn = (events: ChatEvent[]) =>
        (foldChat(events).turns.find((t) => t.kind === 'assistant') as AnswerTurn).parts.find((p): p is ToolPart => p.kind === 'tool')!

      // The wait outlived its process: still waiting, never dispatched.
      const call = callIn(await read())
      expect(call).toMatchObject({ state: 'awaiting-approval', tool: 'test__deliver', input: ARGS })
      expect(mcp.log.some((e) => e.type === 'received' && e.message.method === 'tools/call')).toBe(false)

      // The approval, pushed as the events route pushes it, while no worker lives; then the successor starts.
      await chat.server.push(
        sessionId,
        'kim',
        { id: 'yes1', type: 'tool.decision', payload: { of: 'g1', call: call.call, decision: 'approve', args: argsHash(ARGS), cancelVersion: 0 } },
        { refersTo: referencedIds, admit: (inputs, found) => admitChatPush(chat.server, 'kim', inputs, found, { id: sessionId }) },
      )
      await chat.server.startWorker({ pollMs: 50 })
      const events = await logWhenFinished(chat.server, sessionId, 'kim')
      expect(callIn(events)).toMatchObject({ state: 'done', decided: 'approve' })
      expect((foldChat(events).turns.find((t) => t.kind === 'assistant') as AnswerTurn).status).toBe('done')
      expect(events.filter((e) => e.type === 'finished')).toHaveLength(1)
      expect(mcp.log.filter((e) => e.type === 'received' && e.message.method === 'tools/call')).toHaveLength(1)
      expect(mcp.log.filter((e) => e.type === 'write')).toHaveLength(1)
    } finally {
      await server?.stopWorkers({ graceMs: 1000 })
      await registry?.close()
      await place.close()
      await mcp.close()
    }
  }, 90_000)
})
