/**
 * The HTTP side of the bench, all on loopback:
 * - `serveBench`: a tiny node:http server with
 *     GET /a2/:session?after=N   the log as SSE: `sseResponse(await server.tail(...))`, the
 *                                app's route minus the cookie (lib/a2's own HTTP helper);
 *     GET /direct/:tag?tokens=N  the baseline: `streamText` against the same upstream piped
 *                                straight to the client as SSE text deltas;
 *     GET /ping                  a plain keep-alive response (memory baseline);
 *     GET /snapshot/:session     the app's snapshot route minus the cookie (`snapshot` option):
 *                                a chat's first screen, or `?above=` / `?below=` a page.
 * - `openSse`: an SSE client that timestamps every event on arrival.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { performance } from 'node:perf_hooks'
import { streamText, type LanguageModel } from 'ai'
import { sseResponse, type A2Server } from '@/lib/a2/server'
import { prompt } from './upstream'

export const OWNER = 'bench'

export interface BenchHttp {
  url: string
  server: http.Server
  close(): Promise<void>
}

export async function serveBench(options: {
  a2?: A2Server<any>
  model?: LanguageModel
  snapshot?: (request: Request, sessionId: string) => Promise<Response>
}): Promise<BenchHttp> {
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1')
    const parts = url.pathname.split('/').filter(Boolean)
    try {
      if (parts[0] === 'ping') {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' })
        res.end('ok')
        return
      }
      if (parts[0] === 'snapshot' && options.snapshot) {
        const response = await options.snapshot(new Request(url), parts[1])
        res.writeHead(response.status, Object.fromEntries(response.headers))
        res.end(Buffer.from(await response.arrayBuffer()))
        return
      }
      if (parts[0] === 'a2' && options.a2) {
        const controller = new AbortController()
        res.once('close', () => controller.abort())
        const after = Number(url.searchParams.get('after') ?? -1)
        const batches = await options.a2.tail(parts[1], OWNER, { after, signal: controller.signal })
        const response = sseResponse(batches as AsyncGenerator<any>, controller.signal)
        res.writeHead(response.status, Object.fromEntries(response.headers))
        Readable.fromWeb(response.body as any).pipe(res)
        return
      }
      if (parts[0] === 'direct' && options.model) {
        const controller = new AbortController()
        res.once('close', () => controller.abort())
        res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform' })
        res.write('retry: 1000\n\n')
        const result = streamText({
          model: options.model,
          messages: [{ role: 'user', content: prompt(parts[1], Number(url.searchParams.get('tokens') ?? 100)) }],
          abortSignal: controller.signal,
          maxRetries: 0,
        })
        try {
          for await (const part of result.stream) {
            if (part.type === 'text-delta') res.write(`data: ${JSON.stringify({ type: 'chunk', delta: part.text })}\n\n`)
            else if (part.type === 'finish') res.write(`data: ${JSON.stringify({ type: 'finished' })}\n\n`)
          }
        } catch {
          // the client went away: the abort is the point
        }
        res.end()
        return
      }
      res.writeHead(404).end()
    } catch (error) {
      if (!res.headersSent) res.writeHead(500)
      res.end(String(error))
    }
  })
  server.maxConnections = 10_000
  return {
    url: await listenForStreams(server),
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** Listens on a free loopback port, its SSE connections (and idle keep-alives: the memory baseline) open for a whole figure; resolves with its URL. */
export async function listenForStreams(server: http.Server): Promise<string> {
  server.keepAliveTimeout = 600_000
  server.headersTimeout = 60_000
  server.requestTimeout = 0
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

export interface SseEvent {
  id?: string
  data: any
  /** performance.now() when the bytes carrying it arrived. */
  at: number
}

export interface SseClient {
  /** Resolves when the response headers and the first bytes arrived (the tail is open). */
  opened: Promise<void>
  /** Resolves when the server ends the stream or the client closes it. */
  ended: Promise<void>
  close(): void
}

/**
 * One SSE connection on its own socket (`headers`: e.g. a browser's cookie; `method`: POST for a
 * chat route that answers with its stream); `onEvent` gets each parsed event with its arrival time.
 */
export function openSse(
  url: string,
  onEvent: (event: SseEvent) => void,
  options: { headers?: Record<string, string>; method?: 'GET' | 'POST' } = {},
): SseClient {
  let markOpened!: () => void
  let failOpened!: (e: Error) => void
  let markEnded!: () => void
  const opened = new Promise<void>((resolve, reject) => ((markOpened = resolve), (failOpened = reject)))
  const ended = new Promise<void>((resolve) => (markEnded = resolve))
  opened.catch(() => {})
  const req = http.request(url, { method: options.method ?? 'GET', agent: false, headers: options.headers }, (res) => {
    if (res.statusCode !== 200) {
      failOpened(new Error(`SSE ${url} answered ${res.statusCode}`))
      res.resume()
      return
    }
    res.setEncoding('utf8')
    let buffer = ''
    res.on('data', (chunk: string) => {
      const at = performance.now()
      markOpened()
      buffer += chunk
      let cut: number
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut)
        buffer = buffer.slice(cut + 2)
        let id: string | undefined
        let data = ''
        for (const line of block.split('\n')) {
          if (line.startsWith('data: ')) data += line.slice(6)
          else if (line.startsWith('id: ')) id = line.slice(4)
        }
        // The AI SDK's UI message stream ends with `data: [DONE]`, which is not JSON.
        if (data && data !== '[DONE]') onEvent({ id, data: JSON.parse(data), at })
      }
    })
    res.on('end', markEnded)
    res.on('close', markEnded)
  })
  req.on('error', (error) => {
    failOpened(error)
    markEnded()
  })
  req.end()
  return {
    opened,
    ended,
    close: () => req.destroy(),
  }
}
