/**
 * A worker killed (`kill -9`) while an MCP call runs as a task (the Tasks extension): the task's
 * id is in the log (the call's `tool.state`), so the successor asks the server about that task
 * (`tasks/get`) instead of calling again or calling it "may have happened": the task completed
 * while no worker lived → the call is done, with the task's result, and it was delivered once.
 * A real child process, a real upstream, the real MCP test server over Streamable HTTP (its log
 * is the evidence); on Postgres and on PGlite (a directory the next process opens).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storeForChild } from '@/test/child-store'
import type { A2Server } from '@/lib/a2/server'
import { waitUntil } from '@/lib/a2/testing'
import { layers } from '@/test/db'
import { logWhenFinished } from '@/test/chat'
import { spawnChatWorker } from '@/test/chat-worker-process'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { startMcpTestServer, type McpTestServer } from '@/scripts/mcp-test-server'
import { mcpRegistry, type McpRegistry } from '@/lib/mcp/servers'
import { buildChatServer } from '../server/chat-server'
import type { Chat, ChatEvent } from '../contract'
import { foldChat, type AnswerTurn, type ToolPart } from '../fold/reducer'

/** The generate consumer's lease: a run inside a call that is not overlapSafe is taken over only once it lapses (lib/a2 §9). */
const LEASE_MS = 15_000

describe.each(layers)('a worker killed while its MCP call runs as a task, on %s', (kind) => {
  let upstream: Upstream
  beforeAll(async () => {
    upstream = await startUpstream({ tokenMs: 5, tokens: 10 })
  })
  afterAll(async () => {
    await upstream.close()
  })

  it.each([
    { path: 'run at once', approval: 'never' as const },
    // The default for a destructive tool: the call waits, is approved, and runs in the approvals consumer's run.
    { path: 'approved', approval: undefined },
  ])(
    '$path: the successor asks tasks/get about the recorded task: completed while no worker lived → done with its result, delivered once',
    async ({ approval }) => {
      // The task's work takes 2 s: it completes after the kill, before the successor's lease lapses.
      const mcp: McpTestServer = await startMcpTestServer({ holdMs: 2_000 })
      const received = (method: string) => mcp.log.filter((e) => e.type === 'received' && e.message.method === method)
      const place = await storeForChild(kind, 'a2-task-crash-')
      let registry: McpRegistry | undefined
      let server: A2Server<Chat> | undefined
      try {
        const child = spawnChatWorker({
          store: place.location,
          upstream: upstream.url,
          webhook: '',
          ask: 'Tell the team [[call test__deliver_task {"message":"deploy done"}]]',
          owner: 'kim',
          mcpServers: { test: { url: mcp.url, approval } },
          approval: approval === undefined ? 'approve' : undefined,
        })
        const { sessionId } = await child.report('asked')
        // The task exists and the worker holds its id (it polls it): the worker dies mid-task.
        await waitUntil(() => received('tasks/get').length > 0 || undefined, 'the task to be polled', 20_000)
        await child.kill()
        const polledBefore = received('tasks/get').length

        const store = await place.open()
        registry = mcpRegistry({ test: { type: 'http', url: mcp.url, approval } })
        const chat = buildChatServer(store, { OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'upstream' }, undefined, {
          registry,
          offers: await registry.offers(),
        })
        server = chat.server
        await chat.server.startWorker({ pollMs: 50 })
        const events = (await waitUntil(
          async () => {
            const log = (await chat.server.read(sessionId, 'kim', { limit: 10_000 })) as ChatEvent[]
            return log.some((e) => e.type === 'finished') ? log : undefined
          },
          'the successor to settle the call and finish the answer',
          LEASE_MS + 30_000,
        )) as ChatEvent[]
        const answer = foldChat(events).turns.find((t) => t.kind === 'assistant') as AnswerTurn
        const call = answer.parts.find((p): p is ToolPart => p.kind === 'tool')!
        expect(call).toMatchObject({ tool: 'test__deliver_task', state: 'done', ...(approval === undefined && { decided: 'approve' }) })
        expect(JSON.stringify(call.result)).toContain('delivered: deploy done')
        // Asked, not called again: one tools/call, one write, and the successor's own tasks/get.
        expect(received('tools/call')).toHaveLength(1)
        expect(mcp.log.filter((e) => e.type === 'write')).toHaveLength(1)
        expect(received('tasks/get').length).toBeGreaterThan(polledBefore)
        expect(answer.status).toBe('done')
        await logWhenFinished(chat.server, sessionId, 'kim')
      } finally {
        await server?.stopWorkers({ graceMs: 1000 })
        await registry?.close()
        await place.close()
        await mcp.close()
      }
    },
    LEASE_MS + 90_000,
  )
})
