/**
 * sendWebhook: POSTs to the configured webhook (A2_WEBHOOK_URL) with an Idempotency-Key, asked by
 * key when a Stop cuts it off (webhook.ts). Offered only when one is configured; without one, a
 * call an earlier configuration made cannot be asked about: it stays unknown, for an operator.
 */
import { z } from 'zod'
import type { ToolKind } from '../tool-kind'
import type { Webhook, WebhookReceipt } from '../webhook'

export function sendWebhook(webhook: Webhook | undefined): ToolKind<{ message: string }, WebhookReceipt> {
  return {
    name: 'sendWebhook',
    description: 'Send a short message to the webhook the operator configured (for example a team channel).',
    inputSchema: z.object({ message: z.string().min(1).max(2000) }),
    offered: webhook !== undefined,
    dispatch: (input, { idempotencyKey, signal, sessionId, answer }) => {
      if (!webhook) throw new Error('sendWebhook is not configured (A2_WEBHOOK_URL)')
      return webhook.post({ idempotencyKey, signal, body: { message: input.message, session: sessionId, answer } })
    },
    lookup: (idempotencyKey) => (webhook ? webhook.ask(idempotencyKey) : Promise.resolve('unknown')),
  }
}
