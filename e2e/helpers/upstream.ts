/**
 * The upstream test server's record, with the request bodies, so a test can find the
 * model calls of its own prompts (each test sends a unique nonce) and ignore the rest.
 */
import { UPSTREAM_URL } from '../../playwright.config'

export interface UpstreamCall {
  id: number
  startedAt: number
  tokensSent: number
  closedAt?: number
  closedEarly: boolean
  completedAt?: number
  body: { messages?: { role: string; content: unknown }[] }
}

/** The pace and length the config gives the upstream (playwright.config.ts webServer env). */
export const UPSTREAM_TOKENS = 400
export const UPSTREAM_TOKEN_MS = 60

/** The upstream's deterministic answer to every prompt: `tok0 tok1 … tok399`, as the page shows it. */
export function fullAnswer(tokens = UPSTREAM_TOKENS): string {
  return Array.from({ length: tokens }, (_, i) => `tok${i}`).join(' ')
}

export async function upstreamCalls(): Promise<UpstreamCall[]> {
  const response = await fetch(`${UPSTREAM_URL}/__requests`)
  return (await response.json()) as UpstreamCall[]
}

function contentText(content: unknown): string {
  return typeof content === 'string' ? content : JSON.stringify(content)
}

/** The calls whose last message (the prompt being answered) contains `nonce`. */
export async function callsFor(nonce: string): Promise<UpstreamCall[]> {
  return (await upstreamCalls()).filter((call) => {
    const last = call.body?.messages?.at(-1)
    return last !== undefined && contentText(last.content).includes(nonce)
  })
}

/** The messages of a call as plain strings: `role: text`. */
export function callMessages(call: UpstreamCall): { role: string; text: string }[] {
  return (call.body.messages ?? []).map((m) => ({ role: m.role, text: contentText(m.content) }))
}

/** Polls the calls for `nonce` until `predicate` holds; throws with the last record after `timeoutMs`. */
export async function waitForCalls(nonce: string, predicate: (calls: UpstreamCall[]) => boolean, timeoutMs = 10_000): Promise<UpstreamCall[]> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const calls = await callsFor(nonce)
    if (predicate(calls)) return calls
    if (Date.now() > until) {
      const plain = calls.map(({ body: _body, ...rest }) => rest)
      throw new Error(`upstream calls for ${nonce} never matched within ${timeoutMs} ms; saw ${JSON.stringify(plain)}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** A prompt no other test sends, so its upstream calls can be told apart. */
export function nonce(label: string): string {
  return `${label}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`
}

/** Polls until `predicate` holds for the recorded calls, or throws after `timeoutMs`. */
export async function waitForUpstream(predicate: (calls: UpstreamCall[]) => boolean, timeoutMs = 10_000): Promise<UpstreamCall[]> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const calls = await upstreamCalls()
    if (predicate(calls)) return calls
    if (Date.now() > until) throw new Error(`upstream never matched; last: ${JSON.stringify(calls.slice(-3).map(({ body: _b, ...c }) => c))}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
