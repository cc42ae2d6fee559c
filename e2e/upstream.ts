/** What the upstream test server recorded, read over HTTP (it runs as Playwright's webServer). */
import { UPSTREAM_URL } from '../playwright.config'

export interface RecordedRequest {
  id: number
  startedAt: number
  tokensSent: number
  closedAt?: number
  closedEarly: boolean
  completedAt?: number
}

export async function upstreamRequests(): Promise<RecordedRequest[]> {
  const response = await fetch(`${UPSTREAM_URL}/__requests`)
  return (await response.json()) as RecordedRequest[]
}

/** Polls until `predicate` holds for the recorded requests, or throws after `timeoutMs`. */
export async function waitForUpstream(predicate: (requests: RecordedRequest[]) => boolean, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs
  for (;;) {
    const requests = await upstreamRequests()
    if (predicate(requests)) return requests
    if (Date.now() > until) throw new Error(`upstream never matched; last: ${JSON.stringify(requests.slice(-3))}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
