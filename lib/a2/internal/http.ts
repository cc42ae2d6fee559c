/**
 * Route-handler helpers on web-standard Request/Response, so any framework's routes can
 * serve a2: bounded JSON bodies, typed JSON errors, and the log as server-sent events.
 */
import type { A2Event } from './core/contract'
import { A2Error } from './core/errors'
import { isStoreUnreachable } from './store/outage'
import { encodeSseEvent, errorBody, SSE_KEEP_ALIVE, SSE_OPEN } from './core/wire'

/**
 * Reads a JSON body of at most `maxBytes`, counting what actually arrives (Content-Length
 * can lie), within `timeoutMs` when given: a body trickled one byte per 10 s held a
 * connection for 330 s+ (a 408 now).
 */
export async function readJsonBody(request: Request, maxBytes: number, options: { timeoutMs?: number; allowEmpty?: boolean } = {}): Promise<unknown> {
  const declared = Number(request.headers.get('content-length') ?? 0)
  if (declared > maxBytes) throw new A2Error('payload_too_large', `body is over ${maxBytes} bytes`)
  if (!request.body) {
    if (options.allowEmpty) return undefined
    throw new A2Error('invalid_json', 'empty body')
  }
  const reader = request.body.getReader()
  let timer: ReturnType<typeof setTimeout> | undefined
  const timedOut = new Promise<never>((_, reject) => {
    if (options.timeoutMs === undefined) return
    timer = setTimeout(() => reject(new A2Error('request_timeout', `the body did not arrive within ${options.timeoutMs} ms`)), options.timeoutMs)
  })
  timedOut.catch(() => {}) // observed below; never an unhandled rejection
  const parts: Uint8Array[] = []
  let size = 0
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), timedOut])
      if (done) break
      size += value.byteLength
      if (size > maxBytes) throw new A2Error('payload_too_large', `body is over ${maxBytes} bytes`)
      parts.push(value)
    }
  } catch (error) {
    void reader.cancel().catch(() => {})
    throw error
  } finally {
    clearTimeout(timer)
  }
  const text = new TextDecoder().decode(Buffer.concat(parts))
  if (options.allowEmpty && text.trim() === '') return undefined
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new A2Error('invalid_json', 'body is not valid JSON', { cause: error })
  }
}

/** A typed JSON error; anything that is not an A2Error is logged and answered as a plain 500. */
export function errorResponse(error: unknown, headers: HeadersInit = {}): Response {
  if (error instanceof A2Error) {
    return Response.json(error.toJSON(), { status: error.status, headers })
  }
  // The store is away (a Postgres restart): the request may be sent again in a moment, and a
  // browser's outbox does (a 5xx is retried, a 4xx would end its intent): 503, never 500.
  if (isStoreUnreachable(error)) {
    const unavailable = new A2Error('unavailable', 'the database cannot be reached; try again', { cause: error })
    return Response.json(unavailable.toJSON(), {
      status: unavailable.status,
      headers: { ...Object.fromEntries(new Headers(headers)), 'Retry-After': '1' },
    })
  }
  console.error('[a2] unexpected error', error)
  return Response.json(errorBody('internal', 'internal error'), { status: 500, headers })
}

/**
 * Serves batches of events as SSE (framing in wire.ts, spec in PROTOCOL.md): `id:` is the
 * event index (so the browser's Last-Event-ID resumes exactly after it), comments keep
 * proxies from idling out, and everything is released when the client goes away (`signal`
 * is the request's).
 */
export function sseResponse(
  batches: AsyncGenerator<A2Event[]>,
  signal: AbortSignal,
  options: { keepAliveMs?: number; headers?: HeadersInit; onClose?: () => void } = {},
): Response {
  const encoder = new TextEncoder()
  let keepAlive: ReturnType<typeof setInterval> | undefined
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const close = () => {
        clearInterval(keepAlive)
        options.onClose?.()
        void batches.return(undefined)
        try {
          controller.close()
        } catch {
          // already closed
        }
      }
      signal.addEventListener('abort', close, { once: true })
      // 15 s: under the 30–60 s idle timeouts of common proxies and load balancers.
      keepAlive = setInterval(() => {
        try {
          controller.enqueue(encoder.encode(SSE_KEEP_ALIVE))
        } catch {
          close()
        }
      }, options.keepAliveMs ?? 15_000)
      controller.enqueue(encoder.encode(SSE_OPEN))
      void (async () => {
        try {
          for await (const batch of batches) {
            let chunk = ''
            for (const event of batch) chunk += encodeSseEvent(event)
            controller.enqueue(encoder.encode(chunk))
          }
        } catch (error) {
          if (!signal.aborted) console.error('[a2] tail failed', error)
        } finally {
          close()
        }
      })()
    },
    cancel() {
      clearInterval(keepAlive)
      options.onClose?.()
      void batches.return(undefined)
    },
  })
  return new Response(stream, {
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      ...options.headers,
    },
  })
}
