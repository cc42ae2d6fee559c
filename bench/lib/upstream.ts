/**
 * The upstream model server for the bench (scripts/upstream-server.ts, a real HTTP server
 * speaking chat-completions SSE), answering each request with tokens unique to it: a
 * request whose prompt carries `[[b:<tag>:<n>]]` streams `<tag>w0 `, `<tag>w1 ` … n
 * tokens, so a token seen by a client is matched to the moment the upstream wrote it by
 * its content alone. A prompt carrying `[[br:<tag>:<n>]]` too is answered with those n tokens as
 * reasoning (`reasoning_content` deltas) first, as a reasoning model streams its thinking.
 */
import { startUpstream, type Upstream, type UpstreamRequest } from '@/scripts/upstream-server'

const TAG = /\[\[b:([A-Za-z0-9_]+):(\d+)\]\]/g

export function prompt(tag: string, tokens: number): string {
  return `Benchmark prompt [[b:${tag}:${tokens}]]`
}

const REASONING_TAG = /\[\[br:([A-Za-z0-9_]+):(\d+)\]\]/g

/** A prompt answered with `parts` reasoning deltas and no text: figure 12's reasoning answer. */
export function reasoningPrompt(tag: string, parts: number): string {
  return `${prompt(tag, 0)} [[br:${tag}:${parts}]]`
}

const tags = new WeakMap<object, { tag: string; tokens: number } | undefined>()

/** The tag of a request (the last one in its messages: the newest user message); computed once per body. */
export function tagOf(body: unknown): { tag: string; tokens: number } | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  if (tags.has(body)) return tags.get(body)
  const text = JSON.stringify((body as { messages?: unknown }).messages ?? [])
  const last = [...text.matchAll(TAG)].at(-1)
  const tag = last ? { tag: last[1], tokens: Number(last[2]) } : undefined
  tags.set(body, tag)
  return tag
}

export const token = (tag: string, i: number): string => `${tag}w${i} `

/** The reasoning a request asks for (`[[br:…]]` in its newest message), or none. */
function reasoningOf(body: unknown): string | undefined {
  const t = tagOf(body)
  if (!t) return undefined
  const text = JSON.stringify((body as { messages?: unknown }).messages ?? [])
  const asked = [...text.matchAll(REASONING_TAG)].find((m) => m[1] === t.tag)
  return asked ? Array.from({ length: Number(asked[2]) }, (_, i) => token(t.tag, i)).join('') : undefined
}

export function startBenchUpstream(tokenMs: number): Promise<Upstream> {
  return startUpstream({
    tokenMs,
    reasoning: reasoningOf,
    text: (body) => {
      const t = tagOf(body)
      if (!t) return 'untagged request'
      return Array.from({ length: t.tokens }, (_, i) => token(t.tag, i)).join('')
    },
  })
}

/** Index of the upstream's requests by tag, kept current as requests arrive. */
export function requestsByTag(upstream: Upstream): {
  get(tag: string): UpstreamRequest | undefined
  wait(tag: string, ms?: number): Promise<UpstreamRequest>
} {
  const byTag = new Map<string, UpstreamRequest>()
  let seen = 0
  const get = (tag: string) => {
    for (; seen < upstream.requests.length; seen++) {
      const request = upstream.requests[seen]
      const t = tagOf(request.body)
      if (t) byTag.set(t.tag, request)
    }
    return byTag.get(tag)
  }
  return {
    get,
    wait: (tag, ms = 30_000) => {
      const found = get(tag)
      return found ? Promise.resolve(found) : upstream.waitForRequest((r) => tagOf(r.body)?.tag === tag, ms)
    },
  }
}

/** Upstream emit time of each token of a request, by token text. */
export function tokenTimes(request: UpstreamRequest, tag: string): Map<string, number> {
  const times = new Map<string, number>()
  request.tokenTimes.forEach((at, i) => times.set(token(tag, i), at))
  return times
}

export type { Upstream, UpstreamRequest }
