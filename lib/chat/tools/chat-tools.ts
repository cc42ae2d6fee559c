/**
 * The assistant's tools, each call run through runToolCall (an effect, its state in the log):
 * - saveNote: writes a note to the user's outbox (a side effect asked by key: notes.find);
 * - listNotes: reads the user's saved notes (read-only: nothing outside changes);
 * - sendWebhook: POSTs to the configured webhook (A2_WEBHOOK_URL) with an Idempotency-Key,
 *   offered only when one is configured; asked by key when a Stop cuts it off (webhook.ts).
 */
import { tool, type ToolSet } from 'ai'
import type { ReconcileResult } from '@/lib/a2/server'
import { z } from 'zod'
import type { NoteRow } from '@/db/schema'
import type { NoteOutbox } from '../notes'
import { runToolCall, toolEffectKey, type ToolCallRun } from './tool-call'
import type { Webhook } from './webhook'
import type { McpTools } from './mcp'
import { mcpTool } from './mcp-tool'

export interface ChatTools {
  notes: NoteOutbox
  webhook?: Webhook
  mcp?: McpTools
}

/**
 * Whether a dispatched call of a dead attempt happened, by its effect key (the consumer's
 * reconcile hook): a note or a webhook delivery is looked up by its idempotency key; a read,
 * or anything else, changed nothing outside and is "not done".
 */
export async function reconcileToolCall(key: string, idempotencyKey: string, { notes, webhook, mcp }: ChatTools): Promise<ReconcileResult> {
  for (const offer of mcp?.offers ?? [])
    if (key.startsWith(toolEffectKey(offer.modelName, ''))) {
      const kind = mcpTool(offer, mcp!.registry)
      return kind.lookup ? kind.lookup(idempotencyKey) : { done: false }
    }
  if (key.startsWith(toolEffectKey('saveNote', ''))) {
    const saved = await notes.find(idempotencyKey)
    return saved ? { done: true, result: saved } : { done: false }
  }
  if (key.startsWith(toolEffectKey('sendWebhook', ''))) return webhook ? webhook.ask(idempotencyKey) : 'unknown'
  return { done: false }
}

export function chatTools(run: ToolCallRun, { notes, webhook, mcp }: ChatTools): ToolSet {
  const { ctx } = run
  const tools: ToolSet = {
    saveNote: tool({
      description: 'Save a short note for the user to find later on their notes page.',
      inputSchema: z.object({ note: z.string().min(1).max(2000) }),
      execute: async (input, { toolCallId }) => {
        const saved = await runToolCall<NoteRow>(
          run,
          { call: toolCallId, tool: 'saveNote', input },
          (idempotencyKey) => notes.save({ idempotencyKey, sessionId: ctx.sessionId, body: input.note }),
          {
            ask: async (key) => {
              const saved = await notes.find(key)
              return saved ? { done: true, result: saved } : { done: false }
            },
          },
        )
        await ctx.append({ type: 'note.saved', payload: { of: ctx.event.id, note: input.note, key: saved.idempotencyKey } })
        return { saved: true }
      },
    }),
    listNotes: tool({
      description: "Read the user's saved notes, newest first.",
      inputSchema: z.object({ limit: z.number().int().min(1).max(20).optional() }),
      execute: (input, { toolCallId }) =>
        runToolCall(
          run,
          { call: toolCallId, tool: 'listNotes', input },
          async () => (await notes.listOf(ctx.sessionId, input.limit ?? 10)).map((note) => note.body),
          { readOnly: true },
        ),
    }),
  }
  if (webhook) {
    tools.sendWebhook = tool({
      description: 'Send a short message to the webhook the operator configured (for example a team channel).',
      inputSchema: z.object({ message: z.string().min(1).max(2000) }),
      execute: (input, { toolCallId }) =>
        runToolCall(
          run,
          { call: toolCallId, tool: 'sendWebhook', input },
          (idempotencyKey, signal) =>
            webhook.post({ idempotencyKey, signal, body: { message: input.message, session: ctx.sessionId, answer: ctx.event.id } }),
          { ask: (key) => webhook.ask(key) },
        ),
    })
  }
  for (const offer of mcp?.offers ?? []) {
    const kind = mcpTool(offer, mcp!.registry)
    tools[kind.name] = tool({
      description: kind.description,
      inputSchema: kind.inputSchema,
      execute: (input, { toolCallId }) =>
        runToolCall(
          run,
          { call: toolCallId, tool: kind.name, input },
          (idempotencyKey, signal) => kind.dispatch(input as Record<string, unknown>, { idempotencyKey, signal }),
          {
            ask: kind.lookup && ((key) => kind.lookup!(key)),
            readOnly: kind.readOnly,
          },
        ),
    })
  }
  return tools
}
