/**
 * A real local HTTP receiver for the sendWebhook tool (lib/chat/tools/webhook.ts's protocol),
 * for tests and e2e: it records a POST the moment its body arrives (a receiver acts on what
 * reached it, whether or not the sender waits for the answer), answers after `holdMs` (a
 * delivery that takes time, so a Stop can land during it), and answers GET by key.
 */
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface WebhookReceiver {
  url: string
  /** Deliveries by Idempotency-Key, in arrival order. */
  received: Map<string, unknown>
  /** POSTs whose sender closed the request before the answer (aborted mid-call). */
  abandoned: number
  close(): Promise<void>
}

export async function startWebhookReceiver(options: { holdMs?: number; port?: number } = {}): Promise<WebhookReceiver> {
  const holdMs = options.holdMs ?? 0
  const received = new Map<string, unknown>()
  const state = { abandoned: 0 }
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://receiver')
    if (req.method === 'GET') {
      const key = url.searchParams.get('idempotencyKey') ?? ''
      res.writeHead(received.has(key) ? 200 : 404, { 'content-type': 'application/json' })
      return res.end(JSON.stringify(received.has(key) ? { key, received: true } : { key, received: false }))
    }
    const key = req.headers['idempotency-key']
    if (req.method !== 'POST' || typeof key !== 'string') {
      res.writeHead(400)
      return res.end()
    }
    const body = await readBody(req)
    if (!received.has(key)) received.set(key, body)
    let answered = false
    res.on('close', () => void (answered || state.abandoned++))
    setTimeout(() => {
      answered = true
      if (res.destroyed) return
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ key, received: true }))
    }, holdMs)
  })
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    get abandoned() {
      return state.abandoned
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  let text = ''
  for await (const piece of req) text += piece
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}
