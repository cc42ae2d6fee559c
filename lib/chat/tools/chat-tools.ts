/**
 * The assistant's tools: every configured kind (kinds/, each through the ToolKind door) offered to
 * the model, each call run through runToolCall (an effect, its states in the log), and asked about
 * by its effect key when a dead attempt left it dispatched.
 */
import { tool, type ToolSet } from 'ai'
import type { ReconcileResult } from '@/lib/a2/server'
import type { NoteOutbox } from './notes'
import { runToolCall, type ToolCallRun } from './run-tool-call'
import { parseToolCallKey } from './tool-call'
import type { ToolKind } from './tool-kind'
import type { Webhook } from './webhook'
import { listNotes } from './kinds/list-notes'
import { saveNote } from './kinds/save-note'
import { sendWebhook } from './kinds/send-webhook'
import { mcpTool } from './kinds/mcp-tool'
import type { McpTools } from './mcp'

/** What the tools are configured with: the note outbox, and the webhook (A2_WEBHOOK_URL) when one is set. */
export interface ChatToolConfig {
  notes: NoteOutbox
  /** Where the sendWebhook tool delivers (A2_WEBHOOK_URL); unset, the tool is not offered. */
  webhook?: Webhook
  /** The operator's MCP servers' tools (A2_MCP_SERVERS), listed when the process booted; unset, none. */
  mcp?: McpTools
}

/** Every tool kind this configuration knows, in the order the model is offered them. */
export function toolKinds({ notes, webhook, mcp }: ChatToolConfig): ToolKind[] {
  return [saveNote(notes), listNotes(notes), sendWebhook(webhook), ...(mcp?.offers ?? []).map((offer) => mcpTool(offer, mcp!.registry))]
}

/**
 * Whether a dispatched call of a dead attempt happened, by its effect key (the consumer's
 * reconcile hook): a kind that can be asked is asked by the idempotency key; a read, the model
 * call, or anything else changed nothing outside and is "not done".
 */
export async function reconcileToolCall(key: string, idempotencyKey: string, kinds: readonly ToolKind[]): Promise<ReconcileResult> {
  const named = parseToolCallKey(key)
  const kind = named && kinds.find((k) => k.name === named.tool)
  return kind?.lookup ? kind.lookup(idempotencyKey) : { done: false }
}

/**
 * The offered kinds as the AI SDK's tools. A kind whose calls wait for approval is offered without
 * `execute`: the model's call ends its step unrun, and the handler turns it into a wait
 * (answer/approvals.ts) that a decision ends, in another run.
 */
export function chatTools(run: ToolCallRun, kinds: readonly ToolKind[]): ToolSet {
  const { ctx } = run
  const tools: ToolSet = {}
  for (const kind of kinds) {
    if (kind.offered === false) continue
    if (kind.approval) {
      tools[kind.name] = tool({ description: kind.description, inputSchema: kind.inputSchema })
      continue
    }
    tools[kind.name] = tool({
      description: kind.description,
      inputSchema: kind.inputSchema,
      execute: async (input: unknown, { toolCallId }) => {
        const result = await runToolCall(
          run,
          { call: toolCallId, tool: kind.name, input },
          (idempotencyKey, signal, recordTask) =>
            kind.dispatch(input, { idempotencyKey, signal, sessionId: ctx.sessionId, answer: ctx.event.id, recordTask }),
          { ask: kind.lookup && ((key) => kind.lookup!(key)), readOnly: kind.readOnly },
        )
        return kind.toModel ? kind.toModel(result, input, ctx) : result
      },
    })
  }
  return tools
}

/** Runs an approved call of a kind that waited (answer/approvals.ts), as an offered kind's execute would have. */
export async function runApprovedCall(run: ToolCallRun, kind: ToolKind, call: { call: string; input: unknown }): Promise<unknown> {
  const { ctx } = run
  const result = await runToolCall(
    run,
    { call: call.call, tool: kind.name, input: call.input },
    (idempotencyKey, signal, recordTask) =>
      kind.dispatch(call.input, { idempotencyKey, signal, sessionId: ctx.sessionId, answer: ctx.event.id, recordTask }),
    { ask: kind.lookup && ((key) => kind.lookup!(key)), readOnly: kind.readOnly },
  )
  return kind.toModel ? kind.toModel(result, call.input, ctx) : result
}
