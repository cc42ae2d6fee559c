/**
 * The upstream test server's record, with the request bodies, so a test can find the
 * model calls of its own prompts (each test sends a unique nonce) and ignore the rest.
 */
import { UPSTREAM_URL } from '../../playwright.config'
import { pollUntil } from '../../test/poll'

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

/**
 * Waits until `predicate` holds for the calls for `nonce`; throws with the last record after
 * `timeoutMs`. It polls: the upstream is another process whose record is read over HTTP, and
 * it announces nothing.
 */
export async function waitForCalls(nonce: string, predicate: (calls: UpstreamCall[]) => boolean, timeoutMs = 10_000): Promise<UpstreamCall[]> {
  let last: UpstreamCall[] = []
  return pollUntil(
    () => `upstream calls for ${nonce} to match; saw ${JSON.stringify(last.map(({ body: _body, ...rest }) => rest))}`,
    async () => {
      last = await callsFor(nonce)
      return predicate(last) ? last : undefined
    },
    { timeoutMs },
  )
}

/** A prompt no other test sends, so its upstream calls can be told apart. */
export function nonce(label: string): string {
  return `${label}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`
}

/** Waits until `predicate` holds for all the recorded calls (polled, as waitForCalls), or throws after `timeoutMs`. */
export async function waitForUpstream(predicate: (calls: UpstreamCall[]) => boolean, timeoutMs = 10_000): Promise<UpstreamCall[]> {
  let last: UpstreamCall[] = []
  return pollUntil(
    () => `the upstream's record to match; last: ${JSON.stringify(last.slice(-3).map(({ body: _b, ...c }) => c))}`,
    async () => {
      last = await upstreamCalls()
      return predicate(last) ? last : undefined
    },
    { timeoutMs },
  )
}
