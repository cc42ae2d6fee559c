/**
 * A real local HTTP receiver for the sendWebhook tool (lib/chat/tools/webhook.ts's protocol),
 * for tests and e2e: it records a POST the moment its body arrives (a receiver acts on what
 * reached it, whether or not the sender waits for the answer), answers after `holdMs` (a
 * delivery that takes time, so a Stop can land during it), and answers GET by key.
 * GET by key answers in the lookup protocol's words (docs/webhook.md).
 * `acceptAfterMs` holds a POST before acting on it (a receiver that queues its work: a sender that
 * gives up first never delivered); `askStatus` makes every GET answer that bare status, or `askBody`
 * (a receiver that cannot say, or an endpoint that does not speak the protocol: a bare 404, an app shell's 200).
 * A body containing `[[queued]]` is held 60 s that way, one containing `[[mute]]` is asked with a
 * 503: how a browser test picks the receiver's behaviour from its prompt. `GET /__received` lists
 * what arrived, for tests in another process.
 */
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { pathToFileURL } from 'node:url'

export interface WebhookReceiver {
  url: string
  /** Deliveries by Idempotency-Key, in arrival order. */
  received: Map<string, unknown>
  /** POSTs that reached it (acted on or not yet). */
  arrived: number
  /** POSTs whose sender closed the request before the answer (aborted mid-call). */
  abandoned: number
  close(): Promise<void>
}

export interface WebhookReceiverOptions {
  holdMs?: number
  acceptAfterMs?: number
  askStatus?: number
  /** With askStatus: the body every GET answers (an app shell's HTML, say); none by default. */
  askBody?: string
  port?: number
}

export async function startWebhookReceiver(options: WebhookReceiverOptions = {}): Promise<WebhookReceiver> {
  const holdMs = options.holdMs ?? 0
  const received = new Map<string, unknown>()
  const state = { arrived: 0, abandoned: 0 }
  /** Keys whose GET answers 503: the receiver cannot say. */
  const muted = new Set<string>()
  /** Keys a GET was told "none" of: never acted on after that. */
  const answeredNone = new Set<string>()
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://receiver')
    if (req.method === 'GET' && url.pathname === '/__received') {
      res.writeHead(200, { 'content-type': 'application/json' })
      return res.end(JSON.stringify({ keys: [...received.keys()], arrived: state.arrived, abandoned: state.abandoned }))
    }
    if (req.method === 'GET') {
      if (options.askStatus || muted.has(url.searchParams.get('idempotencyKey') ?? '')) {
        res.writeHead(options.askStatus ?? 503)
        return res.end(options.askBody)
      }
      // The lookup protocol's own words (docs/webhook.md): the key asked, and what the receiver has of it.
      const key = url.searchParams.get('idempotencyKey') ?? ''
      // "none" is a promise: a POST under this key it still holds is not acted on afterwards.
      if (!received.has(key)) answeredNone.add(key)
      res.writeHead(200, { 'content-type': 'application/json' })
      return res.end(
        JSON.stringify(
          received.has(key)
            ? { idempotencyKey: key, delivery: 'received', receipt: { key, received: true } }
            : { idempotencyKey: key, delivery: 'none' },
        ),
      )
    }
    const key = req.headers['idempotency-key']
    if (req.method !== 'POST' || typeof key !== 'string') {
      res.writeHead(400)
      return res.end()
    }
    // Closed before the answer: the sender gave up (a Stop aborted its request).
    res.on('close', () => void (res.writableEnded || state.abandoned++))
    state.arrived++
    // Read at once (a socket left unread never sees its sender close), acted on after acceptAfterMs.
    const body = await readBody(req)
    const asks = JSON.stringify(body)
    if (asks.includes('[[mute]]')) muted.add(key)
    const acceptAfterMs = asks.includes('[[queued]]') ? 60_000 : options.acceptAfterMs
    if (acceptAfterMs) await new Promise((resolve) => setTimeout(resolve, acceptAfterMs))
    if (res.destroyed) return
    if (answeredNone.has(key)) return void res.writeHead(409).end()
    if (!received.has(key)) received.set(key, body)
    setTimeout(() => {
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
    get arrived() {
      return state.arrived
    },
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

const runDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href

if (runDirectly) {
  const env = process.env
  const receiver = await startWebhookReceiver({
    port: Number(env.PORT ?? 4030),
    holdMs: env.WEBHOOK_HOLD_MS ? Number(env.WEBHOOK_HOLD_MS) : undefined,
  })
  console.log(`webhook receiver listening on ${receiver.url}`)
}
