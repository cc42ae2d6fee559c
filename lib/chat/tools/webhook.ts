/**
 * The webhook the sendWebhook tool delivers to (A2_WEBHOOK_URL): a real outside side effect
 * that takes time and can be asked about afterwards. The protocol a receiver speaks:
 * - `POST <url>` with a JSON body and an `Idempotency-Key` header: a repeat of a key is one
 *   delivery; any 2xx is delivered.
 * - `GET <url>?idempotencyKey=<key>`: asked about a delivery (a Stop or a crash cut its POST off).
 *   It is settled only by an answer in the lookup protocol's own words (docs/webhook.md): 200 with
 *   JSON `{ "idempotencyKey": <key>, "delivery": "received", "receipt": … }` → done, or
 *   `{ "idempotencyKey": <key>, "delivery": "none" }` → it did not happen. Anything else (a bare
 *   404 or 200 — what most endpoints answer a GET they do not serve —, a 5xx, a timeout, HTML,
 *   another key, another shape) says nothing about the delivery: the call stays UNKNOWN.
 */
import { z } from 'zod'
import type { Verdict } from './tool-call'

export interface WebhookReceipt {
  status: number
  receipt: unknown
}

export interface Webhook {
  post(delivery: { idempotencyKey: string; body: unknown; signal: AbortSignal }): Promise<WebhookReceipt>
  /** Whether the receiver has the delivery under this key: done, not done, or 'unknown' when it cannot say. */
  ask(idempotencyKey: string): Promise<Verdict<WebhookReceipt>>
}

/** 5 s for the receiver to answer a question about a delivery: past it the call stays UNKNOWN for an operator. */
const ASK_TIMEOUT_MS = 5_000

export function webhook(url: string): Webhook {
  return {
    async post({ idempotencyKey, body, signal }) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'Idempotency-Key': idempotencyKey },
        body: JSON.stringify(body),
        signal,
      })
      if (!response.ok) throw new Error(`the webhook answered ${response.status}`)
      return { status: response.status, receipt: await response.json().catch(() => null) }
    },
    async ask(idempotencyKey) {
      const asked = new URL(url)
      asked.searchParams.set('idempotencyKey', idempotencyKey)
      try {
        const response = await fetch(asked, { signal: AbortSignal.timeout(ASK_TIMEOUT_MS), headers: { accept: 'application/json' } })
        if (response.status !== 200) return 'unknown'
        const answer = LookupAnswer.safeParse(await response.json())
        if (!answer.success || answer.data.idempotencyKey !== idempotencyKey) return 'unknown'
        return answer.data.delivery === 'received' ? { done: true, result: { status: 200, receipt: answer.data.receipt ?? null } } : { done: false }
      } catch {
        return 'unknown' // unreachable, timed out, or not JSON
      }
    },
  }
}

/** A receiver's answer in the lookup protocol (docs/webhook.md); a body of any other shape says nothing. */
const LookupAnswer = z.discriminatedUnion('delivery', [
  z.object({ idempotencyKey: z.string(), delivery: z.literal('received'), receipt: z.unknown() }),
  z.object({ idempotencyKey: z.string(), delivery: z.literal('none') }),
])
