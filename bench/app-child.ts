/**
 * The app's API on a process of its own, over HTTP (figure 9): the route handlers Next
 * serves (test/routes.ts loads them as Next does) behind a plain node:http server that
 * turns each request into a web Request and streams the Response back — what `next start`
 * does around a route handler, minus Next's own router and page machinery. Boot as the
 * app's instrumentation does it: every request stamped with its socket's address (the
 * per-address limits), the chat server opened before the first request; no embedded worker.
 *
 * Env: BENCH_DB_URL, BENCH_UPSTREAM_URL; BENCH_TRACE=1 traces the requests the client marks
 * (lib/statement-trace.ts). Driven by the parent over IPC (bench/lib/children.ts):
 * `cpu` answers this process's CPU and event-loop delay since the last call.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { stampPeerAddress } from '@/lib/http/peer-address'
import { loadRoutes } from '@/test/routes'
import { serveParent, tellParent } from './lib/children'
import { cpuSampler } from './lib/machine'
import { traceStatements } from './lib/statement-trace'
import { getStore } from '@/lib/store'

const databaseUrl = process.env.BENCH_DB_URL
const upstreamUrl = process.env.BENCH_UPSTREAM_URL
if (!databaseUrl || !upstreamUrl) throw new Error('app-child needs BENCH_DB_URL and BENCH_UPSTREAM_URL')

const routes = await loadRoutes({
  databaseUrl,
  env: { OPENAI_API_KEY: 'bench', OPENAI_BASE_URL: upstreamUrl, OPENAI_MODEL: 'bench' },
})
stampPeerAddress()
await routes.chatServer.getChatServer()

// BENCH_TRACE=1 (`--trace`): the statements of each request the client marks, sent to the parent.
const tracer = process.env.BENCH_TRACE === '1' ? traceStatements(await getStore(), (trace) => tellParent({ type: 'trace', trace })) : undefined
const server = http.createServer((req, res) => (tracer ? tracer.wrap(req, res, () => void serve(req, res)) : void serve(req, res)))
// Tails stay open for the whole figure.
server.keepAliveTimeout = 600_000
server.requestTimeout = 0

async function serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  // Next aborts the route's request.signal when the client goes away (a tail's end).
  const controller = new AbortController()
  res.once('close', () => controller.abort())
  try {
    const headers = new Headers()
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined) continue
      for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one)
    }
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD'
    const request = new Request(`http://${req.headers.host ?? '127.0.0.1'}${req.url ?? '/'}`, {
      method: req.method,
      headers,
      signal: controller.signal,
      // The body as a stream, as Next hands it over: the route reads (and bounds) it itself.
      ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: 'half' } : {}),
    } as RequestInit)
    const response = await routes.dispatch(request)
    if (!response) {
      res.writeHead(404).end()
      return
    }
    const out: Record<string, string | string[]> = {}
    response.headers.forEach((value, name) => {
      if (name !== 'set-cookie') out[name] = value
    })
    const cookies = response.headers.getSetCookie()
    if (cookies.length > 0) out['set-cookie'] = cookies
    res.writeHead(response.status, out)
    if (!response.body) {
      res.end()
      return
    }
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      if (res.destroyed) break
      res.write(chunk)
    }
    res.end()
  } catch (error) {
    if (!res.headersSent) res.writeHead(500)
    res.end(String(error))
  }
}

await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
serveParent({ cpu: cpuSampler() }, async () => {
  server.closeAllConnections()
  server.close()
  await routes.chatServer.shutdownChatServer().catch(() => {})
})
tellParent({ type: 'ready', pid: process.pid, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })
