/**
 * The chat's a2 server for this process: the store, the generate consumer on the selected
 * model, and the embedded worker. On globalThis and opened lazily (never at module top
 * level: Next evaluates route modules during `next build`, and instrumentation and routes
 * load separate copies of this module).
 */
import type { StoredEffect } from '../tools/stored-effect'
import { createServer, type A2Server, type Worker } from '@/lib/a2/server'
import { getStore, closeStore } from '@/lib/store'
import { env } from '@/lib/env'
import { selectModels, type ModelConfig } from '@/lib/ai/model'
import { filesOf } from '@/lib/files'
import { fileSourceOf } from '../answer/file-parts'
import { chat, type Chat } from '../contract'
import { generateConsumer } from '../answer/generate'
import { approvalsConsumer } from '../answer/approvals'
import { startApprovalExpiry } from '../answer/approval-expiry'
import { toolKinds } from '../tools/chat-tools'
import { noteOutbox, type NoteOutbox } from '../tools/notes'
import { webhook } from '../tools/webhook'
import { openMcpTools, type McpTools } from '../tools/mcp'

export interface ChatServer {
  server: A2Server<Chat>
  notes: NoteOutbox
  worker?: Worker
  modelLabel: string
  /** The MCP servers' tools, in a process that runs answers (closed at shutdown). */
  mcp?: McpTools
  /** The sweep that lets waits for approval expire as denied, in a process that runs answers. */
  expiry?: { stop(): void }
}

const globalChat = globalThis as unknown as { __a2Chat?: Promise<ChatServer> }

export function getChatServer(options: { worker?: boolean } = {}): Promise<ChatServer> {
  globalChat.__a2Chat ??= boot(options.worker ?? env().A2_EMBEDDED_WORKER).catch((error) => {
    globalChat.__a2Chat = undefined
    throw error
  })
  return globalChat.__a2Chat
}

export function buildChatServer(
  store: Awaited<ReturnType<typeof getStore>>,
  modelConfig: ModelConfig = env(),
  webhookUrl: string | undefined = env().A2_WEBHOOK_URL,
  mcp?: McpTools,
) {
  // Every configured model is built once, at boot; a generate names the one that answers it (the first when it names none).
  const models = selectModels(modelConfig)
  const { model, label, tools, files } = models[0]
  const notes = noteOutbox(store)
  // The session's caps count the answers' chunks too: an answer that fills the chat ends there ('session_full').
  const caps = { maxEvents: env().A2_MAX_EVENTS_PER_SESSION, maxPushedBytes: env().A2_MAX_PUSHED_BYTES_PER_SESSION }
  const toolConfig = { notes, webhook: webhookUrl ? webhook(webhookUrl) : undefined, mcp }
  const fileSource = fileSourceOf(filesOf(store.db))
  // Asked only once the server runs a worker (a run's ending), so `server` is set by then.
  const storedEffects = async (jobId: number): Promise<readonly StoredEffect[]> => (await server.operator.runDetail(jobId)).effects
  const server = createServer({
    contract: chat,
    consumers: [
      generateConsumer({ model, takesTools: tools, takesFiles: files, files: fileSource, models, storedEffects, ...toolConfig }),
      // A call that waited for approval: the decision (or a Stop) ends the wait in a run of its own (answer/approvals.ts).
      approvalsConsumer({ kinds: toolKinds(toolConfig), model, takesTools: tools, takesFiles: files, files: fileSource, models, storedEffects }),
    ],
    store,
    caps,
  })
  return { server, notes, modelLabel: label }
}

async function boot(withWorker: boolean): Promise<ChatServer> {
  const store = await getStore()
  // Only a process that runs answers calls tools: an app instance without a worker connects to no MCP server.
  const mcp = withWorker ? await openMcpTools(env().A2_MCP_SERVERS) : undefined
  const built = buildChatServer(store, env(), env().A2_WEBHOOK_URL, mcp)
  // 3 s: a tab re-sends a Stop it kept while the server was down every second, so it lands
  // before this (re)started process resumes the run it stops.
  const worker = withWorker ? await built.server.startWorker({ resumeAfterMs: 3_000 }) : undefined
  const expiry = withWorker ? startApprovalExpiry(built.server) : undefined
  console.log(`[a2] ${store.kind} store ready; model ${built.modelLabel}; ${worker ? `worker ${worker.id}` : 'no worker in this process'}`)
  return { ...built, worker, mcp, expiry }
}

/** Graceful shutdown: stop claiming, hand in-flight attempts over at once (surrendered, refunded), close the database. */
export async function shutdownChatServer(): Promise<void> {
  const pending = globalChat.__a2Chat
  if (!pending) return
  globalChat.__a2Chat = undefined
  const chatServer = await pending.catch(() => undefined)
  chatServer?.expiry?.stop()
  await chatServer?.server.stopWorkers()
  await chatServer?.mcp?.registry.close()
  await closeStore()
}
