/**
 * Figure 16's anchor: a chat route as the AI SDK's resumable-streams recipe (and vercel's chatbot)
 * builds it, on a process of its own, on vercel's `resumable-stream` over Redis.
 *
 *   POST /chat/:tag?tokens=N   `streamText` against the bench upstream, answered as the AI SDK's
 *                              UI message stream (SSE); `consumeSseStream` hands a copy to
 *                              `createNewResumableStream`, which keeps reading it to the end
 *                              whoever reads the response, and would serve it to a resumer
 *                              (`resumeExistingStream`, through Redis pub/sub).
 *
 * `createResumableStreamContext` opens its own two clients from REDIS_URL, as in production;
 * `waitUntil` is what Next's `after` is to it: the producer's end is awaited (the `settled`
 * command) before the process exits. The model is the rig's (the same upstream, no retries).
 *
 * Env: BENCH_UPSTREAM_URL, REDIS_URL. Driven by the parent over IPC (bench/lib/children.ts).
 */
import http from 'node:http'
import { Readable } from 'node:stream'
import { createOpenAI } from '@ai-sdk/openai'
import { streamText } from 'ai'
import { createResumableStreamContext } from 'resumable-stream'
import { serveParent, tellParent } from './lib/children'
import { listenForStreams } from './lib/http'
import { prompt } from './lib/upstream'

const upstreamUrl = process.env.BENCH_UPSTREAM_URL
if (!upstreamUrl || !process.env.REDIS_URL) throw new Error('anchor-child needs BENCH_UPSTREAM_URL and REDIS_URL')
const model = createOpenAI({ apiKey: 'bench', baseURL: upstreamUrl }).chat('bench')

const producing = new Set<Promise<unknown>>()
const context = createResumableStreamContext({
  waitUntil: (promise) => {
    producing.add(promise)
    void promise.finally(() => producing.delete(promise))
  },
})

/** A web Response streamed to a node response; the client leaving cancels the body (as Next does). */
function send(response: Response, res: http.ServerResponse) {
  res.writeHead(response.status, Object.fromEntries(response.headers))
  if (!response.body) return void res.end()
  const body = Readable.fromWeb(response.body as any)
  res.once('close', () => body.destroy())
  body.pipe(res)
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1')
  const [route, tag] = url.pathname.split('/').filter(Boolean)
  try {
    if (route === 'chat' && tag && req.method === 'POST') {
      const result = streamText({
        model,
        messages: [{ role: 'user', content: prompt(tag, Number(url.searchParams.get('tokens') ?? 100)) }],
        maxRetries: 0,
      })
      return send(
        result.toUIMessageStreamResponse({
          consumeSseStream: async ({ stream }) => {
            await context.createNewResumableStream(tag, () => stream)
          },
        }),
        res,
      )
    }
    res.writeHead(404).end()
  } catch (error) {
    if (!res.headersSent) res.writeHead(500)
    res.end(String(error))
  }
})
const listening = await listenForStreams(server)

serveParent(
  {
    // Every producer has read its answer to the end (and marked it done in Redis).
    settled: async () => {
      while (producing.size) await Promise.allSettled([...producing])
      return true
    },
  },
  async () => {
    server.closeAllConnections()
    await Promise.allSettled([...producing])
  },
)
tellParent({ type: 'ready', pid: process.pid, url: listening })
