/**
 * The MCP client layer against real MCP servers (scripts/mcp-test-server.ts, built with the SDK),
 * over Streamable HTTP and over stdio, asserting what the server's own log says it received:
 * the tools and their annotations, the idempotency key in `_meta`, a Stop that reaches the server
 * in the transport's own words (a closed response stream over HTTP, `notifications/cancelled`
 * with the request's id over stdio), a server that ignores it and writes anyway, and a call run
 * as a task, settled by `tasks/get`.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { mkdtempSync, readFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pollUntil } from '@/test/poll'
import { startMcpTestServer, type McpLogEntry, type McpTestServer } from '@/scripts/mcp-test-server'
import { connectMcp, type McpConnection, type McpToolInfo } from './client'
import type { McpServerConfig } from './config'

interface Rig {
  connection: McpConnection
  /** Another client of the same server (a successor worker after its predecessor died). */
  reconnect(): Promise<McpConnection>
  log(): McpLogEntry[]
}

type Transport = 'http' | 'stdio'
const open: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  for (const thing of open.splice(0).reverse()) await thing.close().catch(() => undefined)
})

async function rig(transport: Transport, holdMs: number): Promise<Rig> {
  if (transport === 'http') {
    const server: McpTestServer = await startMcpTestServer({ holdMs })
    open.push(server)
    const config: McpServerConfig = { type: 'http', url: server.url }
    const connect = async () => {
      const c = await connectMcp('test', config)
      open.push(c)
      return c
    }
    return { connection: await connect(), reconnect: connect, log: () => server.log }
  }
  const logFile = join(mkdtempSync(join(tmpdir(), 'a2-mcp-')), 'log.jsonl')
  const config: McpServerConfig = {
    type: 'stdio',
    command: process.execPath,
    args: ['--import', 'tsx', 'scripts/mcp-test-server.ts', '--stdio'],
    env: { MCP_HOLD_MS: String(holdMs), MCP_LOG_FILE: logFile },
  }
  const connect = async () => {
    const c = await connectMcp('test', config)
    open.push(c)
    return c
  }
  const log = () =>
    existsSync(logFile)
      ? readFileSync(logFile, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as McpLogEntry)
      : []
  return { connection: await connect(), reconnect: connect, log }
}

const toolNamed = async (c: McpConnection, name: string): Promise<McpToolInfo> => {
  const tool = (await c.tools()).find((t) => t.name === name)
  if (!tool) throw new Error(`no tool ${name}`)
  return tool
}
const callOf = (log: McpLogEntry[], key: string) =>
  log.find((e) => e.type === 'received' && e.message.method === 'tools/call' && e.message.params?._meta?.['chat.a2/idempotency-key'] === key)
const writesOf = (log: McpLogEntry[], key: string) => log.filter((e) => e.type === 'write' && e.key === key)

describe.each<Transport>(['http', 'stdio'])('MCP over %s', (transport) => {
  it('lists the tools with their annotations kept', async () => {
    const { connection } = await rig(transport, 0)
    const tools = Object.fromEntries((await connection.tools()).map((t) => [t.name, t]))
    expect(tools.lookup_writes).toMatchObject({ server: 'test', readOnly: true, annotations: { readOnlyHint: true }, taskSupport: 'forbidden' })
    expect(tools.deliver).toMatchObject({ readOnly: false, annotations: { destructiveHint: true, idempotentHint: false } })
    expect(tools.deliver_stubborn).toMatchObject({ readOnly: false, annotations: { destructiveHint: true } })
    expect(tools.deliver_task).toMatchObject({ readOnly: false, taskSupport: 'required' })
    expect(tools.deliver.inputSchema).toMatchObject({ type: 'object', properties: { message: { type: 'string' } } })
  })

  it('a call carries its idempotency key in _meta: the server writes once per key', async () => {
    const { connection, log } = await rig(transport, 0)
    const deliver = await toolNamed(connection, 'deliver')
    const first = await connection.call(deliver, { message: 'hello' }, { idempotencyKey: 'k-1', signal: new AbortController().signal })
    expect(first.content).toEqual([{ type: 'text', text: 'delivered: hello' }])
    await connection.call(deliver, { message: 'hello' }, { idempotencyKey: 'k-1', signal: new AbortController().signal })
    expect(callOf(log(), 'k-1')).toBeDefined()
    expect(writesOf(log(), 'k-1')).toHaveLength(1)
  })

  it('a Stop mid-call reaches the server in its transport’s words, and the server writes nothing', async () => {
    const { connection, log } = await rig(transport, 30_000)
    const deliver = await toolNamed(connection, 'deliver')
    const stop = new AbortController()
    const call = connection.call(deliver, { message: 'hold' }, { idempotencyKey: 'k-stop', signal: stop.signal })
    const received = await pollUntil('the server received the call', () => callOf(log(), 'k-stop'))
    const id = (received as Extract<McpLogEntry, { type: 'received' }>).message.id
    const reason = new Error('stopped by the user')
    stop.abort(reason)
    await expect(call).rejects.toBe(reason)
    if (transport === 'http') {
      await pollUntil('the response stream of that request closed', () => log().some((e) => e.type === 'stream-closed' && e.ids.includes(id!)))
    } else {
      await pollUntil('notifications/cancelled with the request id', () =>
        log().some((e) => e.type === 'received' && e.message.method === 'notifications/cancelled' && e.message.params?.requestId === id),
      )
    }
    await pollUntil('the tool stopped', () => log().some((e) => e.type === 'cancelled-honoured' && e.requestId === id))
    expect(writesOf(log(), 'k-stop')).toHaveLength(0)
  })

  it('a server that ignores the cancellation completes anyway: the write lands after the Stop', async () => {
    const { connection, log } = await rig(transport, 300)
    const stubborn = await toolNamed(connection, 'deliver_stubborn')
    const stop = new AbortController()
    const call = connection.call(stubborn, { message: 'anyway' }, { idempotencyKey: 'k-stubborn', signal: stop.signal })
    await pollUntil('the server received the call', () => callOf(log(), 'k-stubborn'))
    stop.abort(new Error('stop'))
    await expect(call).rejects.toThrow('stop')
    await pollUntil('the write after the Stop', () => writesOf(log(), 'k-stubborn').length === 1)
  })

  it('a task-supporting tool runs as a task: its id is told first, the result arrives, tasks/get says completed', async () => {
    const { connection, log } = await rig(transport, 200)
    const task = await toolNamed(connection, 'deliver_task')
    const ids: string[] = []
    const result = await connection.call(
      task,
      { message: 'as a task' },
      { idempotencyKey: 'k-task', signal: new AbortController().signal, onTask: (id) => void ids.push(id) },
    )
    expect(result.content).toEqual([{ type: 'text', text: 'delivered: as a task' }])
    expect(ids).toHaveLength(1)
    expect(log().some((e) => e.type === 'task-created' && e.taskId === ids[0] && e.key === 'k-task')).toBe(true)
    expect(await connection.askTask(ids[0])).toEqual({ done: true, result: expect.objectContaining({ content: result.content }) })
  })

  it('a Stop mid-task sends tasks/cancel: tasks/get says cancelled, in the server’s own word, and nothing is written', async () => {
    const { connection, log } = await rig(transport, 2_000)
    const task = await toolNamed(connection, 'deliver_task')
    const stop = new AbortController()
    let taskId: string | undefined
    const call = connection.call(
      task,
      { message: 'stop me' },
      { idempotencyKey: 'k-task-stop', signal: stop.signal, onTask: (id) => void (taskId = id) },
    )
    await pollUntil('the task was created', () => taskId)
    stop.abort(new Error('stop'))
    await expect(call).rejects.toThrow('stop')
    expect(log().some((e) => e.type === 'received' && e.message.method === 'tasks/cancel')).toBe(true)
    expect(await connection.askTask(taskId!)).toEqual({ done: false, status: 'cancelled' })
    await pollUntil('the task’s work saw the cancel', () => log().some((e) => e.type === 'task-cancelled' && e.taskId === taskId))
    expect(writesOf(log(), 'k-task-stop')).toHaveLength(0)
  })

  it('a successor (a new client) asks about a task its predecessor created', async () => {
    const { connection, reconnect } = await rig(transport, 100)
    const task = await toolNamed(connection, 'deliver_task')
    let taskId: string | undefined
    const result = await connection.call(
      task,
      { message: 'then crash' },
      { idempotencyKey: 'k-task-2', signal: new AbortController().signal, onTask: (id) => void (taskId = id) },
    )
    const successor = await reconnect()
    const verdict = await successor.askTask(taskId!)
    if (transport === 'http') expect(verdict).toEqual({ done: true, result: expect.objectContaining({ content: result.content }) })
    // A stdio server is a child of its client: a new client starts a new server, which cannot say.
    else expect(verdict).toBe('unknown')
  })
})
