/**
 * The webhook the sendWebhook tool delivers to (A2_WEBHOOK_URL): a real outside side effect
 * that takes time and can be asked about afterwards. The protocol a receiver speaks:
 * - `POST <url>` with a JSON body and an `Idempotency-Key` header: a repeat of a key is one
 *   delivery; any 2xx is delivered.
 * - `GET <url>?idempotencyKey=<key>`: 200 (with the delivery's receipt) when it has that key,
 *   404 when it has not. This is how a call a Stop or a crash cut off is settled: asked, not guessed.
 */
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
      const response = await fetch(asked, { signal: AbortSignal.timeout(ASK_TIMEOUT_MS) }).catch(() => undefined)
      if (response?.status === 200) return { done: true, result: { status: 200, receipt: await response.json().catch(() => null) } }
      if (response?.status === 404) return { done: false }
      return 'unknown'
    },
  }
}
