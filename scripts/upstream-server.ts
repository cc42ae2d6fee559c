import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'

// A stand-in for OpenAI's chat-completions endpoint that records, per request, when
// each token was written and when the connection closed. Tests and benchmarks use it
// to prove that pressing Stop really ends the upstream model call.

export type UpstreamRequest = {
  id: number
  /** The parsed JSON the client sent. */
  body: any
  /** Its headers (which key it was sent, say). */
  headers: IncomingHttpHeaders
  startedAt: number
  firstTokenAt?: number
  tokensSent: number
  tokenTimes: number[]
  closedAt?: number
  /** The client went away before `[DONE]`. */
  closedEarly: boolean
  completedAt?: number
  /** Resolves when the connection closed for any reason. */
  closed: Promise<void>
  /** A next token is scheduled: false once the stream ended or the client went away. */
  writing: boolean
}

export type Upstream = {
  /** Base URL ending in /v1, as passed to `createOpenAI({ baseURL })`. */
  url: string
  port: number
  requests: UpstreamRequest[]
  /** Requests answered with an error status instead of a completion (`[[fail …]]`, `refuseTools`), in order. */
  refused: { status: number; body: any }[]
  waitForRequest(pred?: (request: UpstreamRequest) => boolean, timeoutMs?: number): Promise<UpstreamRequest>
  close(): Promise<void>
}

export type UpstreamOptions = {
  port?: number
  tokenMs?: number
  /** Number of `tok<i> ` tokens to stream when `text` is not given (a prompt with `[[tokens N]]` gets N). */
  tokens?: number
  /** Answer text per request, streamed word by word; overrides `tokens`. */
  text?: (body: any) => string
  /**
   * What a request ending with the assistant's unfinished message gets. 'continue': the rest
   * of the answer, as servers that continue a final assistant message do (vLLM's
   * continue_final_message, llama.cpp). 'restart': the whole answer from its start, as
   * chat-completions servers without prefill do whatever the instructions say (OpenAI's own
   * among them). A prompt containing `[[restarts]]` gets 'restart' either way. Default 'continue'.
   */
  continuation?: 'continue' | 'restart'
  /**
   * Refuse every request that sends `tools`, as llama.cpp's server does when started without
   * --jinja: 400 `tools param requires --jinja flag` (REFUSE_TOOLS below is its body).
   */
  refuseTools?: boolean
  /**
   * Reasoning streamed as `reasoning_content` deltas before the answer, as llama.cpp and
   * DeepSeek-style servers stream a thinking model's reasoning. Default: REASONING's words for a
   * prompt whose last user message contains `[[reasons]]` (N times for `[[reasons N]]`), else none.
   */
  reasoning?: (body: any) => string | undefined
}

/** llama.cpp's answer to `tools` when it runs without --jinja (seen from llama-server). */
export const REFUSE_TOOLS = { error: { code: 400, message: 'tools param requires --jinja flag', type: 'invalid_request_error' } }

/** What a `[[reasons]]` prompt is streamed as reasoning before its answer. */
export const REASONING = 'The user asks something; I should answer briefly and plainly. '

/** What a `[[markdown]]` prompt is answered: a heading, a list, a table and a fenced code block. */
export const MARKDOWN_ANSWER =
  '## Stop is an event\n\nThe log keeps:\n\n- the **question**\n- each `chunk`\n\n| event | who |\n| --- | --- |\n| cancelled | the reader |\n\n```ts\nconst stop = { of, lastSeenIndex }\n```\n'

/** The body of each status `[[fail N STATUS]]` can answer with: what OpenAI-compatible servers send. */
const FAILURE_BODIES: Record<number, unknown> = {
  400: {
    error: {
      message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens.",
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    },
  },
  401: { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } },
  429: { error: { message: 'Rate limit reached for requests. Please try again in 1s.', type: 'requests', code: 'rate_limit_exceeded' } },
  503: { error: { message: 'The model is overloaded right now. Please try again.', type: 'server_error', code: 'overloaded' } },
}

function words(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? []
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => (data += chunk))
    req.on('end', () => resolve(data))
    req.on('error', reject)
  })
}

function json(res: ServerResponse, status: number, value: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(value))
}

export function startUpstream(opts: UpstreamOptions = {}): Promise<Upstream> {
  const tokenMs = opts.tokenMs ?? 20
  const tokenCount = opts.tokens ?? 200
  const requests: UpstreamRequest[] = []
  const waiters = new Set<(request: UpstreamRequest) => void>()

  const lastUserText = (body: { messages?: { role?: string; content?: unknown }[] }): string => {
    const last = (body.messages ?? []).findLast((m) => m.role === 'user')
    return typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '')
  }
  // `[[tokens N]]` in the last user message: N tokens instead of `tokens` (a test whose steps
  // must all happen while the answer streams, however loaded the machine); `[[markdown]]`: MARKDOWN_ANSWER.
  const answerFor = (body: unknown): string[] => {
    if (opts.text) return words(opts.text(body))
    if (lastUserText(body as object).includes('[[markdown]]')) return words(MARKDOWN_ANSWER)
    const asked = /\[\[tokens (\d+)\]\]/.exec(lastUserText(body as object))
    return Array.from({ length: asked ? Number(asked[1]) : tokenCount }, (_, i) => `tok${i} `)
  }

  // A request that ends with the assistant's unfinished message (a successor attempt sending
  // the answer so far) is answered as `continuation` says (the option's comment).
  const restarts = (body: { messages?: { content?: unknown }[] }): boolean =>
    opts.continuation === 'restart' || (body.messages ?? []).some((m) => JSON.stringify(m.content ?? '').includes('[[restarts]]'))
  const tokensFor = (body: unknown): string[] => {
    const tokens = answerFor(body)
    const last = (body as { messages?: { role?: string; content?: unknown }[] }).messages?.at(-1)
    if (last?.role !== 'assistant' || typeof last.content !== 'string' || !last.content || restarts(body as object)) return tokens
    const full = tokens.join('')
    return full.startsWith(last.content) ? words(full.slice(last.content.length)) : tokens
  }

  // `[[reasons]]`: REASONING once; `[[reasons N]]`: N times (long enough to press Stop in the middle).
  const reasoningFor = (body: unknown): string | undefined => {
    if (opts.reasoning) return opts.reasoning(body)
    const match = /\[\[reasons(?: (\d+))?\]\]/.exec(lastUserText(body as object))
    return match ? REASONING.repeat(Number(match[1] ?? 1)) : undefined
  }
  // `[[call NAME {json}]]` in the last user message: the model calls tool NAME with those
  // arguments, unless the conversation already holds a tool result (then it answers in text).
  const toolCallFor = (body: { messages?: { role?: string }[] }): { name: string; arguments: string } | undefined => {
    const match = /\[\[call (\w+) (\{.*?\})\]\]/.exec(lastUserText(body))
    if (!match || (body.messages ?? []).some((m) => m.role === 'tool')) return undefined
    return { name: match[1], arguments: match[2] }
  }

  /**
   * The deltas of one streamed answer, in order: reasoning first, then the tool call's argument
   * fragments or the text. A tool call is streamed as OpenAI-compatible servers stream one: its
   * first delta carries index, id, type and name; the rest only the index and 5 characters of
   * `function.arguments` each, so a client that does not join fragments gets broken JSON.
   */
  const deltasFor = (body: unknown): { deltas: object[]; finishReason: 'stop' | 'tool_calls' } => {
    const reasoning = words(reasoningFor(body) ?? '').map((word) => ({ reasoning_content: word }))
    const call = toolCallFor(body as object)
    if (!call) return { deltas: [...reasoning, ...tokensFor(body).map((token) => ({ content: token }))], finishReason: 'stop' }
    const fragments = call.arguments.match(/[\s\S]{1,5}/g) ?? []
    const id = `call_${Math.random().toString(36).slice(2, 10)}`
    return {
      deltas: [
        ...reasoning,
        { tool_calls: [{ index: 0, id, type: 'function', function: { name: call.name, arguments: '' } }] },
        ...fragments.map((fragment) => ({ tool_calls: [{ index: 0, function: { arguments: fragment } }] })),
      ],
      finishReason: 'tool_calls',
    }
  }

  const promptTokens = (body: { messages?: { content?: unknown }[] }): number =>
    words((body.messages ?? []).map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))).join(' ')).length

  // 'close' fires both after a normal end and when the client disconnects; only the
  // latter leaves completedAt unset.
  function record(body: unknown, headers: IncomingHttpHeaders, res: ServerResponse): UpstreamRequest {
    let markClosed!: () => void
    const request: UpstreamRequest = {
      id: requests.length + 1,
      body,
      headers,
      startedAt: performance.now(),
      tokensSent: 0,
      tokenTimes: [],
      closedEarly: false,
      closed: new Promise<void>((resolve) => (markClosed = resolve)),
      writing: false,
    }
    res.on('close', () => {
      request.closedAt = performance.now()
      request.closedEarly = request.completedAt === undefined
      markClosed()
    })
    requests.push(request)
    for (const waiter of waiters) waiter(request)
    return request
  }

  function streamCompletion(res: ServerResponse, request: UpstreamRequest) {
    const body = request.body
    const { deltas: tokens, finishReason } = deltasFor(body)
    const base = { id: `chatcmpl-${request.id}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: body.model }
    const send = (value: unknown) => res.write(`data: ${typeof value === 'string' ? value : JSON.stringify(value)}\n\n`)
    let timer: ReturnType<typeof setTimeout> | undefined

    // A disconnected client must not cost another token.
    res.on('close', () => {
      clearTimeout(timer)
      request.writing = false
    })

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
    send({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] })

    // Deadlines are measured from the first chunk so pacing doesn't drift with timer lag.
    const origin = performance.now()
    const writeNext = () => {
      // 'close' is emitted a tick after the socket dies; don't write into that gap.
      if (res.destroyed) return
      const i = request.tokensSent
      if (i < tokens.length) {
        send({ ...base, choices: [{ index: 0, delta: tokens[i] }] })
        const now = performance.now()
        request.firstTokenAt ??= now
        request.tokenTimes.push(now)
        request.tokensSent++
        timer = setTimeout(writeNext, Math.max(0, origin + (i + 2) * tokenMs - now))
        request.writing = true
        return
      }
      request.writing = false
      send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finishReason }] })
      if (body.stream_options?.include_usage) {
        const prompt = promptTokens(body)
        send({ ...base, choices: [], usage: { prompt_tokens: prompt, completion_tokens: tokens.length, total_tokens: prompt + tokens.length } })
      }
      send('[DONE]')
      request.completedAt = performance.now()
      res.end()
    }
    timer = setTimeout(writeNext, tokenMs)
    request.writing = true
  }

  function completeAtOnce(res: ServerResponse, request: UpstreamRequest) {
    const body = request.body
    const tokens = tokensFor(body)
    const prompt = promptTokens(body)
    request.tokensSent = tokens.length
    request.completedAt = performance.now()
    json(res, 200, {
      id: `chatcmpl-${request.id}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [{ index: 0, message: { role: 'assistant', content: tokens.join('') }, finish_reason: 'stop' }],
      usage: { prompt_tokens: prompt, completion_tokens: tokens.length, total_tokens: prompt + tokens.length },
    })
  }

  // A prompt containing `[[fail N]]` is refused with a 503 the first N times that exact prompt
  // is asked, then answered: how a test shows a model error, and a Retry that then works.
  // `[[fail N STATUS]]` answers with that status instead (FAILURE_BODIES: 400, 401, 429, 503).
  const failures = new Map<string, number>()
  function failureFor(body: { messages?: { role?: string; content?: unknown }[] }): number | undefined {
    const last = body.messages?.at(-1)
    const text = typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '')
    const match = /\[\[fail (\d+)(?: (\d{3}))?\]\]/.exec(text)
    if (!match) return undefined
    const seen = failures.get(text) ?? 0
    failures.set(text, seen + 1)
    return seen < Number(match[1]) ? Number(match[2] ?? 503) : undefined
  }
  const refused: Upstream['refused'] = []
  const refuse = (res: ServerResponse, body: unknown, status: number, answer: unknown) => {
    refused.push({ status, body })
    json(res, status, answer)
  }

  const server = createServer(async (req, res) => {
    if (req.method === 'GET' && req.url === '/__requests') {
      // Promises don't serialise; other processes only need the plain fields.
      return json(
        res,
        200,
        requests.map(({ closed: _closed, ...plain }) => plain),
      )
    }
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      return json(res, 404, { error: { message: `no route for ${req.method} ${req.url}` } })
    }
    let body: unknown
    try {
      body = JSON.parse(await readBody(req))
    } catch {
      body = undefined
    }
    if (typeof body !== 'object' || body === null) {
      return json(res, 400, { error: { message: 'request body must be a JSON object' } })
    }
    const failure = failureFor(body)
    if (failure !== undefined) return refuse(res, body, failure, FAILURE_BODIES[failure] ?? { error: { message: `failed with ${failure}` } })
    if (opts.refuseTools && Array.isArray((body as { tools?: unknown }).tools)) return refuse(res, body, 400, REFUSE_TOOLS)
    const request = record(body, req.headers, res)
    if (request.body.stream) streamCompletion(res, request)
    else completeAtOnce(res, request)
  })

  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(opts.port ?? 0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}/v1`,
        port,
        requests,
        refused,
        // Requests that arrive later are matched on arrival: match on the body, not on later state.
        waitForRequest(pred = () => true, timeoutMs = 5_000) {
          const existing = requests.find(pred)
          if (existing) return Promise.resolve(existing)
          return new Promise((resolveWait, rejectWait) => {
            const waiter = (request: UpstreamRequest) => {
              if (!pred(request)) return
              clearTimeout(timeout)
              waiters.delete(waiter)
              resolveWait(request)
            }
            const timeout = setTimeout(() => {
              waiters.delete(waiter)
              rejectWait(new Error(`no matching upstream request within ${timeoutMs} ms`))
            }, timeoutMs)
            waiters.add(waiter)
          })
        },
        close() {
          return new Promise<void>((resolveClose, rejectClose) => {
            server.close((error) => (error ? rejectClose(error) : resolveClose()))
            // Streaming and keep-alive sockets would otherwise hold close() open.
            server.closeAllConnections()
          })
        },
      })
    })
  })
}

const runDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href

if (runDirectly) {
  const env = process.env
  const upstream = await startUpstream({
    port: Number(env.PORT ?? 4010),
    tokenMs: env.UPSTREAM_TOKEN_MS ? Number(env.UPSTREAM_TOKEN_MS) : undefined,
    tokens: env.UPSTREAM_TOKENS ? Number(env.UPSTREAM_TOKENS) : undefined,
    continuation: env.UPSTREAM_CONTINUATION === 'restart' ? 'restart' : 'continue',
    refuseTools: env.UPSTREAM_REFUSE_TOOLS === '1',
  })
  console.log(`upstream listening on ${upstream.url}`)
}
