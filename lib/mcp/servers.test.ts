/**
 * The process's MCP servers: their tools offered under `<server>__<tool>` with the approval each
 * needs, an unreachable server left out of the offer (not failing it), and calls routed by server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startMcpTestServer, type McpTestServer } from '@/scripts/mcp-test-server'
import { mcpRegistry, modelToolName, type McpRegistry } from './servers'

describe('the configured MCP servers', () => {
  let server: McpTestServer
  let registry: McpRegistry
  beforeAll(async () => {
    server = await startMcpTestServer()
    registry = mcpRegistry({
      notes: { type: 'http', url: server.url, tools: { deliver_stubborn: { approval: 'never' } } },
      // Nothing listens on port 1: this server's tools are left out, the others still offered.
      gone: { type: 'http', url: 'http://127.0.0.1:1/mcp' },
    })
  })
  afterAll(async () => {
    await registry.close()
    await server.close()
  })

  it('offers each reachable tool as <server>__<tool>, waiting for approval unless read-only or the operator says never', async () => {
    const offers = Object.fromEntries((await registry.offers()).map((o) => [o.modelName, o.needsApproval]))
    expect(offers).toEqual({ notes__lookup_writes: false, notes__deliver: true, notes__deliver_stubborn: false, notes__deliver_task: true })
  })

  it('routes a call to its server with its key', async () => {
    const deliver = (await registry.offers()).find((o) => o.modelName === 'notes__deliver')!.tool
    await registry.call(deliver, { message: 'routed' }, { idempotencyKey: 'k-routed', signal: new AbortController().signal })
    expect(server.writes.get('k-routed')).toEqual({ tool: 'deliver', args: { message: 'routed' } })
  })

  it('asks a task call by its key: completed → done; a plain call cannot be asked', async () => {
    const offers = await registry.offers()
    const task = offers.find((o) => o.modelName === 'notes__deliver_task')!.tool
    const deliver = offers.find((o) => o.modelName === 'notes__deliver')!.tool
    const result = await registry.call(task, { message: 'tasked' }, { idempotencyKey: 'k-tasked', signal: new AbortController().signal })
    expect(await registry.askCall('notes', 'k-tasked')).toEqual({ done: true, result: expect.objectContaining({ content: result.content }) })
    await registry.call(deliver, { message: 'plain' }, { idempotencyKey: 'k-plain', signal: new AbortController().signal })
    expect(await registry.askCall('notes', 'k-plain')).toBe('unknown')
  })

  it('asks a task another process started by the id its caller recorded (a successor after a crash)', async () => {
    const task = (await registry.offers()).find((o) => o.modelName === 'notes__deliver_task')!.tool
    let recorded: string | undefined
    await registry.call(
      task,
      { message: 'before the crash' },
      {
        idempotencyKey: 'k-crashed',
        signal: new AbortController().signal,
        onTask: (taskId) => void (recorded = taskId),
      },
    )
    // A new registry (the successor's process) has no memory of the task: only the recorded id names it.
    const successor = mcpRegistry({ notes: { type: 'http', url: server.url } })
    try {
      expect(await successor.askCall('notes', 'k-crashed')).toBe('unknown')
      expect(await successor.askCall('notes', 'k-crashed', recorded)).toEqual({
        done: true,
        result: expect.objectContaining({ content: expect.any(Array) }),
      })
    } finally {
      await successor.close()
    }
  })

  it('names a tool in the characters a model takes, at most 64 of them', () => {
    expect(modelToolName('files', 'read.file/v2')).toBe('files__read_file_v2')
    expect(modelToolName('s', 'x'.repeat(100))).toHaveLength(64)
  })
})
