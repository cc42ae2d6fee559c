/**
 * The webhook receiver of figure 11: a real HTTP server on this process speaking the sendWebhook
 * tool's protocol (lib/chat/tools/webhook.ts), which holds every POST open (a delivery that
 * takes longer than any Stop) and times, per POST, when its body arrived and when its socket
 * closed, on this process's clock (the upstream's too). scripts/webhook-receiver.ts counts the
 * POSTs a sender abandoned but keeps no times, and a Stop's figure is a time.
 *
 * A POST's body carries the tool's `message`; the figure makes it the sample's tag, so each
 * request is matched to its Stop by content. `GET ?idempotencyKey=` (the tool's reconcile after
 * a Stop) answers 404: a held POST was never acted on, so the call ends `cancelled`.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import type { WatchedRequest } from './watched-request'

export interface HeldPost extends WatchedRequest {
  tag: string
  arrivedAt: number
}

export interface BenchWebhook {
  url: string
  /** Resolves when the POST whose message is `tag` has arrived (its body read). */
  wait(tag: string, ms?: number): Promise<HeldPost>
  /** POSTs that arrived. */
  arrived: number
  close(): Promise<void>
}

export async function startBenchWebhook(): Promise<BenchWebhook> {
  const posts = new Map<string, HeldPost>()
  const waiters = new Map<string, (post: HeldPost) => void>()
  const server = http.createServer((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ received: false }))
      return
    }
    let markClosed!: () => void
    const closed = new Promise<void>((resolve) => (markClosed = resolve))
    let post: HeldPost | undefined
    // 'close' on the response: the sender's socket went away (the response is never ended here).
    res.on('close', () => {
      if (post) post.closedAt = performance.now()
      markClosed()
    })
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (piece: string) => (body += piece))
    req.on('end', () => {
      const tag = messageOf(body)
      post = { tag, arrivedAt: performance.now(), closed, closedEarly: true }
      posts.set(tag, post)
      waiters.get(tag)?.(post)
      waiters.delete(tag)
    })
  })
  server.keepAliveTimeout = 60_000
  server.requestTimeout = 0
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/hook`,
    get arrived() {
      return posts.size
    },
    wait(tag, ms = 20_000) {
      const found = posts.get(tag)
      if (found) return Promise.resolve(found)
      return new Promise<HeldPost>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(tag)
          reject(new Error(`no webhook POST for ${tag} within ${ms} ms`))
        }, ms)
        waiters.set(tag, (post) => {
          clearTimeout(timer)
          resolve(post)
        })
      })
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

function messageOf(body: string): string {
  try {
    const message = (JSON.parse(body) as { message?: unknown }).message
    return typeof message === 'string' ? message : ''
  } catch {
    return ''
  }
}
