import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4FinishReason,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
} from '@ai-sdk/provider'
import { describeAttachments, isAttachmentText } from './offline-files'
import { countText } from './usage'

// A built-in model so the app streams real, readable answers with no API key.
// It paces tokens like a hosted model and honours the abort signal the same way a
// provider's aborted fetch does, so Stop can be exercised end to end offline.

type Topic = {
  paragraphs: string[]
  list: string[]
  code: string
}

const TOPICS: Topic[] = [
  {
    // cancellation
    paragraphs: [
      'Cancellation is only real when it reaches the work itself. Hiding the spinner in the browser is cosmetic; the request that feeds the model has to be torn down too, or you keep paying for tokens nobody will ever read.',
      'The reliable pattern is a single abort signal threaded from the edge of the system down to the last network call. Every layer accepts it, passes it on, and treats an abort as a normal way to finish rather than as a failure.',
      'It also helps to make Stop idempotent. A user may press it twice, or press it just as the answer completes, and both cases should settle into the same final state without errors or duplicate writes.',
    ],
    list: [
      'Create one AbortController per generation.',
      'Pass its signal to every fetch and timer.',
      'Record how the run ended: completed, stopped or failed.',
    ],
    code: 'const controller = new AbortController()\nstopButton.onclick = () => controller.abort()\nawait streamText({ model, prompt, abortSignal: controller.signal })',
  },
  {
    // event logs
    paragraphs: [
      'An append-only event log turns a stream into something you can replay. Each chunk is written with a sequence number, so a client that reconnects can ask for everything after the last number it saw and continue seamlessly.',
      'Because events are never edited in place, the log doubles as an audit trail. You can tell exactly when generation started, which tokens arrived, and whether it finished on its own or was stopped by a person.',
      'Keep the events small and boring. A type, a sequence number, a timestamp and a payload are usually enough, and anything derived, such as the full message text, can be rebuilt by folding over the log.',
    ],
    list: ['Assign sequence numbers on write, not on read.', 'Let readers resume from a cursor.', 'Rebuild views by folding events in order.'],
    code: 'for (const event of log.since(cursor)) {\n  text += event.delta\n  cursor = event.seq\n}',
  },
  {
    // leases
    paragraphs: [
      'A lease is a promise with an expiry date. A worker claims a job for a short window and must renew the claim while it keeps working; if it crashes, the lease lapses and another worker can safely pick the job up.',
      'The important detail is fencing. Every renewal carries a token that increases monotonically, and writes from a worker whose token is stale are rejected, so a paused process cannot wake up and overwrite newer results.',
      'Choose the lease length from how long you are willing to wait after a crash, then renew at a fraction of it. One third is a common choice because it tolerates a missed heartbeat without losing ownership.',
    ],
    list: ['Claim with an expiry and a fencing token.', 'Renew well before the lease runs out.', 'Reject writes that carry a stale token.'],
    code: 'const lease = await jobs.claim(jobId, { ttlMs: 15_000 })\nconst timer = setInterval(() => lease.renew(), 5_000)\ntry { await run(lease) } finally { clearInterval(timer) }',
  },
  {
    // streaming
    paragraphs: [
      'Streaming changes how an answer feels more than how fast it is. The total time may be the same, but the first words appear within a fraction of a second, and people start reading while the rest is still being written.',
      'Server-sent events are a good fit for this because they are plain HTTP. The response stays open, each message is a line of text, and proxies, load balancers and browsers already know how to handle them.',
      'The part that is easy to miss is the end of the stream. A clean finish, an error and a user stop are three different outcomes, and the client should be able to tell them apart instead of guessing from silence.',
    ],
    list: [
      'Flush the first chunk as early as possible.',
      'Send a distinct final event for each outcome.',
      'Close the connection when the client goes away.',
    ],
    code: 'const result = streamText({ model, prompt })\nfor await (const delta of result.textStream) {\n  process.stdout.write(delta)\n}',
  },
  {
    // backpressure
    paragraphs: [
      'Backpressure is how a slow reader tells a fast writer to wait. Without it, a producer keeps buffering chunks in memory until something gives, and the usual thing to give is the process that holds the buffer.',
      'Web streams build this in through the pull model. A source is asked for more data only when the consumer has room, so a model that generates faster than the network can deliver simply pauses instead of piling up text.',
      'Measuring it is straightforward: watch the queue size at each hop. If one stage is always full and the next is always empty, you have found the bottleneck, and adding more buffering there only hides the problem.',
    ],
    list: ['Prefer pull-based sources to push-based ones.', 'Keep high-water marks small and explicit.', 'Watch queue sizes to find the slow stage.'],
    code: 'const stream = new ReadableStream({\n  async pull(controller) {\n    controller.enqueue(await source.next())\n  },\n})',
  },
  {
    // idempotency
    paragraphs: [
      'Idempotency means that doing something twice has the same effect as doing it once. In a chat system that matters whenever a network retry, a double click or a reconnect could otherwise start a second generation.',
      'The usual tool is an idempotency key chosen by the client. The server stores the key with the result of the first attempt and answers any repeat with that stored result instead of running the work again.',
      'Keys need a lifetime and a scope. Keep them long enough to cover realistic retries, tie them to the user or conversation that created them, and make sure a failed first attempt does not poison the key forever.',
    ],
    list: [
      'Generate the key on the client, once per intent.',
      'Store the outcome together with the key.',
      'Replay the stored outcome for duplicates.',
    ],
    code: "const key = crypto.randomUUID()\nawait fetch('/api/chat', {\n  method: 'POST',\n  headers: { 'Idempotency-Key': key },\n  body,\n})",
  },
  {
    // retries and timeouts
    paragraphs: [
      'Retries and timeouts are two halves of the same decision: how long to wait before giving up, and whether giving up is final. Getting either one wrong turns a brief hiccup into an outage or a stuck request.',
      'Exponential backoff with jitter is the safe default. Each attempt waits longer than the last, and the random spread keeps a crowd of clients from retrying in lockstep and knocking the service over again.',
      'Not every error deserves a retry. A timeout or a dropped connection usually does, but a validation error will fail the same way every time, and a user pressing Stop should never be retried at all.',
    ],
    list: ['Put a timeout on every remote call.', 'Back off exponentially and add jitter.', 'Never retry an abort the user asked for.'],
    code: 'const delay = Math.min(30_000, 250 * 2 ** attempt)\nawait sleep(delay / 2 + Math.random() * (delay / 2))',
  },
  {
    // observability
    paragraphs: [
      'You cannot improve what you cannot see, and streaming systems hide a lot. A single request may span a browser, an API route, a worker and a model provider, each with its own idea of when things started and stopped.',
      'Two numbers tell most of the story: time to first token and time from Stop to the upstream connection closing. The first is what users feel; the second tells you whether cancellation actually saves money.',
      'Tests are observability you run before shipping. A fake upstream that records when each request opened and closed lets you assert that pressing Stop really ends the model call, rather than trusting that it probably does.',
    ],
    list: ['Trace one request across every hop.', 'Track time to first token and time to stop.', 'Assert on upstream behaviour in tests.'],
    code: "const started = performance.now()\nconst first = await firstToken(stream)\nmetrics.record('ttft_ms', first - started)",
  },
]

const OPENINGS = [
  (q: string) => `You asked about "${q}". Here is how I would think about it.`,
  (q: string) => `Good question: "${q}". Let me walk through the main ideas.`,
  (q: string) => `On "${q}", a few things are worth separating out.`,
]

const CLOSINGS = [
  'I hope that helps. Ask a follow-up if you want to go deeper on any part.',
  'That is the short version; happy to expand on any of these points.',
  'Let me know which part you would like to explore next.',
]

// FNV-1a: stable across runs and platforms, unlike anything seeded by time.
function hash(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

// Trailing punctuation is dropped so the question sits naturally inside the quotes.
function restate(prompt: string): string {
  const oneLine =
    prompt
      .replace(/\s+/g, ' ')
      .trim()
      .replace(/[?.!]+$/, '') || 'nothing in particular'
  return oneLine.length > 80 ? `${oneLine.slice(0, 77).trimEnd()}...` : oneLine
}

/**
 * What a prompt asks the answer to show. The starters on "/" (starters.ts) promise a list,
 * code, a table and a poem; answering with exactly that is how a newcomer without an API key
 * sees the Markdown rendering.
 */
type Shape = 'poem' | 'table' | 'code' | 'list'

function askedFor(prompt: string): Shape | undefined {
  if (/\b(poem|haiku|verse|limerick)\b/i.test(prompt)) return 'poem'
  if (/\btables?\b/i.test(prompt)) return 'table'
  if (/\b(code|function|snippet|implement|implementation)\b/i.test(prompt)) return 'code'
  if (/\b(list|steps?|checklist)\b/i.test(prompt)) return 'list'
  return undefined
}

const DEBOUNCE = `A debounce waits until calls stop arriving for \`waitMs\`, then runs once with the latest arguments. \`cancel()\` drops a pending call, which is what you want when the thing it would update goes away.

\`\`\`ts
export function debounce<A extends unknown[]>(fn: (...args: A) => void, waitMs: number) {
  let timer: ReturnType<typeof setTimeout> | undefined

  const debounced = (...args: A) => {
    clearTimeout(timer)
    timer = setTimeout(() => {
      timer = undefined
      fn(...args)
    }, waitMs)
  }

  /** Drops the pending call, if any. */
  debounced.cancel = () => {
    clearTimeout(timer)
    timer = undefined
  }

  return debounced
}
\`\`\`

Using it: save a draft half a second after the person stops typing, and never after they left.

\`\`\`ts
const saveDraft = debounce((text: string) => api.saveDraft(text), 500)

editor.addEventListener('input', () => saveDraft(editor.value))

// Leaving the page: drop the pending save instead of firing it late.
window.addEventListener('pagehide', () => saveDraft.cancel())
\`\`\`

Two details matter: the timer is cleared on every call (so only the last one runs), and \`cancel()\` resets it, so a later call starts a fresh wait.`

const SSE_VS_WEBSOCKETS = `Both keep a connection open so the server can send as soon as it has something; they differ in direction and in how much they ask of your infrastructure.

| Aspect | Server-Sent Events | WebSockets |
| --- | --- | --- |
| Direction | Server to client only | Both ways, full duplex |
| Protocol | Plain HTTP response (\`text/event-stream\`) | Upgrade to its own protocol (\`ws://\`, \`wss://\`) |
| Reconnecting | Built in, resumes with \`Last-Event-ID\` | Up to you |
| Data | UTF-8 text | Text and binary frames |
| Proxies and load balancers | Work as for any HTTP request | Need upgrade support and longer idle timeouts |
| Best for | Streaming answers, feeds, notifications | Chat between people, games, collaborative editing |

For streaming a model's answer, Server-Sent Events are usually enough: the browser sends with an ordinary POST (Stop included) and reads the answer as a stream that resumes after a reconnect.`

const CANCELLATION_STEPS = `Cancelling is only real when it reaches the model call itself, so it is worth following one Stop from the button to the provider:

1. **The press is recorded.** The browser sends a \`cancelled\` event naming the answer and the last part it showed, and keeps it until the server confirms, even across a reload.
2. **The server appends it to the log.** In the same transaction the run is marked as cancelling, so nothing can start it again.
3. **The running worker is signalled.** Its abort signal fires and the request to the model is closed, so no more tokens are paid for.
4. **Late tokens are refused.** Anything the model sent after the Stop is turned away at the log's door.
5. **Every view cuts at the same place.** The answer ends exactly where the person stopped reading, in every tab and after a reload.

The order matters: the durable record comes first, so a crash in between can only end in "stopped", never in an answer that quietly keeps going.`

const POEM = `**Stop, at last**

I pressed the square and the sentence stopped,  
mid-word, mid-thought, the last token dropped.  
No ghost of a stream ran on out of sight,  
no meter kept ticking on into the night.  
The log wrote *cancelled*, plain and true,  
and the server heard it, and stopped there too.  `

/** An answer with the shape the prompt asked for, on the prompt's own subject when there is one written for it. */
function shapedAnswer(prompt: string, shape: Shape, h: number): string {
  const topic = TOPICS[h % TOPICS.length]
  const opening = OPENINGS[(h >>> 7) % OPENINGS.length](restate(prompt))
  const closing = CLOSINGS[(h >>> 9) % CLOSINGS.length]
  let body: string
  switch (shape) {
    case 'poem':
      return POEM // a poem needs no preamble
    case 'table':
      body =
        /server-sent|\bsse\b/i.test(prompt) && /websocket/i.test(prompt)
          ? SSE_VS_WEBSOCKETS
          : [topic.paragraphs[0], ['| Step | Practice |', '| --- | --- |', ...topic.list.map((item, i) => `| ${i + 1} | ${item} |`)].join('\n')].join(
              '\n\n',
            )
      break
    case 'code':
      body = /debounce/i.test(prompt) ? DEBOUNCE : [topic.paragraphs[0], '```ts\n' + topic.code + '\n```', topic.paragraphs[1]].join('\n\n')
      break
    case 'list':
      body = /cancel/i.test(prompt)
        ? CANCELLATION_STEPS
        : [topic.paragraphs[0], topic.list.map((item, i) => `${i + 1}. ${item}`).join('\n'), topic.paragraphs[1]].join('\n\n')
      break
  }
  return [opening, body, closing].join('\n\n')
}

/** The deterministic answer the offline model gives to `prompt`. */
export function offlineAnswer(prompt: string): string {
  const h = hash(prompt)
  const shape = askedFor(prompt)
  if (shape) return shapedAnswer(prompt, shape, h)
  // Independent choices read different bits of the hash so they don't move together.
  const topicIndex = h % TOPICS.length
  const topic = TOPICS[topicIndex]
  const paragraphCount = 2 + ((h >>> 3) % 3)
  // Short answers always get a list so every answer lands in roughly 120–250 words.
  const withList = paragraphCount === 2 || ((h >>> 5) & 1) === 1
  const withCode = paragraphCount < 4 && ((h >>> 6) & 1) === 1

  // A fourth paragraph borrows the lead of a neighbouring topic, as real answers drift.
  const paragraphs = topic.paragraphs.slice(0, Math.min(paragraphCount, 3))
  if (paragraphCount === 4) paragraphs.push(TOPICS[(topicIndex + 1) % TOPICS.length].paragraphs[0])

  const blocks = [OPENINGS[(h >>> 7) % OPENINGS.length](restate(prompt)), ...paragraphs]
  if (withList) blocks.push(topic.list.map((item) => `- ${item}`).join('\n'))
  if (withCode) blocks.push('```ts\n' + topic.code + '\n```')
  blocks.push(CLOSINGS[(h >>> 9) % CLOSINGS.length])
  return blocks.join('\n\n')
}

/** Words with their trailing whitespace; concatenating them gives back `text` exactly. */
function tokenize(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? []
}

function lastUserText(prompt: LanguageModelV4Prompt): string {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const message = prompt[i]
    if (message.role !== 'user') continue
    // The files' text (lib/files/extract.ts) is what they were given, not what they asked.
    return message.content.flatMap((part) => (part.type === 'text' && !isAttachmentText(part.text) ? [part.text] : [])).join('\n')
  }
  return ''
}

function promptText(prompt: LanguageModelV4Prompt): string {
  return prompt
    .map((message) =>
      typeof message.content === 'string' ? message.content : message.content.map((part) => ('text' in part ? part.text : '')).join(' '),
    )
    .join('\n')
}

/** Reported in BPE tokens (the unit a hosted model bills in), though the answer streams a word at a time. */
function usage(prompt: LanguageModelV4Prompt, output: string): LanguageModelV4Usage {
  const inputTokens = countText(promptText(prompt))
  const outputTokens = countText(output)
  return {
    inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: outputTokens, text: outputTokens, reasoning: 0 },
  }
}

// What a provider's aborted fetch rejects with: the signal's reason, which for a plain
// `controller.abort()` is a DOMException named AbortError that streamText recognises.
function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError')
}

/**
 * "Remember that …" / "save a note: …" with a saveNote tool on offer: the offline model
 * calls the tool (as a real model would) instead of answering. Returns the note to save.
 */
export function noteRequest(text: string): string | undefined {
  const match = /\b(?:remember(?: that)?|save (?:a |this )?note(?: that)?)[:,]?\s+([\s\S]{1,500})/i.exec(text)
  return match?.[1].trim().replace(/[.!]+$/, '') || undefined
}

/** "…my notes…" asks to read the saved notes (listNotes); "…tell the team…" to post to the webhook (sendWebhook). */
const READS_NOTES = /\b(?:my (?:saved )?notes|notes (?:have )?I (?:have )?saved)\b/i
const TELLS_TEAM = /\b(?:tell|notify|ping) the team\b[:,]?\s*([\s\S]{0,500})/i

/** The tool call to make for this prompt (one the request offers), or undefined to answer in text. */
function toolCallFor(options: LanguageModelV4CallOptions): { toolCallId: string; toolName: string; input: string } | undefined {
  const offered = (name: string) => options.tools?.some((t) => t.type === 'function' && t.name === name)
  const last = options.prompt[options.prompt.length - 1]
  if (last?.role !== 'user') return undefined // after the tool result, answer in text
  const text = lastUserText(options.prompt)
  const call = (toolName: string, input: object) => ({
    toolCallId: `call_${hash(toolName + text).toString(36)}`,
    toolName,
    input: JSON.stringify(input),
  })
  const note = noteRequest(text)
  if (note && offered('saveNote')) return call('saveNote', { note })
  if (READS_NOTES.test(text) && offered('listNotes')) return call('listNotes', { limit: 10 })
  const told = TELLS_TEAM.exec(text)
  if (told && offered('sendWebhook')) return call('sendWebhook', { message: told[1].trim() || restate(text) })
  return undefined
}

/** What the tool answered, as its JSON value (the SDK passes an execute's return value as `json` output). */
function toolOutput(prompt: LanguageModelV4Prompt): { toolName: string; value: unknown } | undefined {
  const last = prompt[prompt.length - 1]
  if (last?.role !== 'tool') return undefined
  const result = last.content.find((part) => part.type === 'tool-result')
  if (!result || result.type !== 'tool-result') return undefined
  const output = result.output as { type: string; value?: unknown }
  return { toolName: result.toolName, value: output.value }
}

/** After a tool call came back, the answer says what it did. */
function afterToolText(options: LanguageModelV4CallOptions): string | undefined {
  const output = toolOutput(options.prompt)
  if (!output) return undefined
  if (output.toolName === 'listNotes') {
    const notes = Array.isArray(output.value) ? output.value.map(String) : []
    return notes.length === 0
      ? 'You have no saved notes yet. Ask me to remember something and it will show up here and on your notes page.'
      : `Your saved notes, newest first:\n\n${notes.map((note) => `- ${note}`).join('\n')}`
  }
  if (output.toolName === 'sendWebhook') return 'Sent to the team webhook, once: a retry of this answer delivers under the same idempotency key.'
  const note = noteRequest(lastUserText(options.prompt)) ?? 'that'
  return `Done — I saved a note: **${note}**. You can find it on your notes page, and it was saved exactly once even if this answer is retried.`
}

/** "Think …" / "reason …" / "ponder …": the model reasons before it answers, as a reasoning model streams its thinking. */
const THINKS = /\b(?:think|thinking|reason|ponder)\b/i

/** The reasoning the offline model streams before its first step's answer or call, or undefined. */
export function offlineReasoning(options: LanguageModelV4CallOptions): string | undefined {
  const last = options.prompt[options.prompt.length - 1]
  const text = lastUserText(options.prompt)
  if (last?.role !== 'user' || !THINKS.test(text)) return undefined
  const call = toolCallFor(options)
  const plan = call
    ? `The ${call.toolName} tool can do this, so I will call it and answer from what it returns.`
    : 'No tool is needed here; I can answer from what I know.'
  return `The user asks: "${restate(text)}". Let me work out what they need before answering. ${plan} I will keep the answer short and concrete, and say plainly what happened.`
}

/**
 * An interrupted answer resumed: when the prompt ends with the assistant's unfinished
 * message (the answer so far, sent by a successor attempt), the model says only the rest,
 * from that point, as a hosted model does when asked to continue. The answer so far is
 * normally a prefix of the full answer (this model wrote it); if it is not, the rest starts
 * after as many words as it holds.
 */
function continuation(prompt: LanguageModelV4Prompt, tokens: string[]): string[] {
  const last = prompt[prompt.length - 1]
  if (last?.role !== 'assistant') return tokens
  const soFar = last.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('')
  if (!soFar) return tokens
  const full = tokens.join('')
  if (full.startsWith(soFar)) return tokenize(full.slice(soFar.length))
  return tokens.slice(tokenize(soFar).length)
}

/**
 * How the offline model answers. 'full': the whole answer (120–250 words). 'brief': its first
 * two blocks only (the opening and the first paragraph, ~60 words), so a second offline model
 * in the picker answers visibly differently with no network.
 */
export type OfflineStyle = 'full' | 'brief'

/** The answer in `style`: 'brief' keeps its first two blocks. */
export function styledAnswer(answer: string, style: OfflineStyle): string {
  return style === 'brief' ? answer.split('\n\n').slice(0, 2).join('\n\n') : answer
}

function answerTokens(
  options: LanguageModelV4CallOptions,
  style: OfflineStyle,
): {
  tokens: string[]
  finishReason: LanguageModelV4FinishReason
} {
  const files = describeAttachments(options.prompt)
  const answer = styledAnswer(offlineAnswer(lastUserText(options.prompt)), style)
  const all = continuation(options.prompt, tokenize(afterToolText(options) ?? (files ? `${files}\n\n${answer}` : answer)))
  const limit = options.maxOutputTokens
  if (limit !== undefined && limit < all.length) {
    return { tokens: all.slice(0, limit), finishReason: { unified: 'length', raw: 'length' } }
  }
  return { tokens: all, finishReason: { unified: 'stop', raw: 'stop' } }
}

export function createOfflineModel(options: { msPerToken?: number; style?: OfflineStyle } = {}): LanguageModelV4 {
  const msPerToken = options.msPerToken ?? 35
  const style = options.style ?? 'full'
  const modelId = style === 'full' ? 'offline' : `offline-${style}`

  return {
    specificationVersion: 'v4',
    provider: 'a2-offline',
    modelId,
    supportedUrls: {},

    async doGenerate(callOptions) {
      const signal = callOptions.abortSignal
      if (signal?.aborted) throw abortReason(signal)
      const { tokens, finishReason } = answerTokens(callOptions, style)
      return {
        content: [{ type: 'text', text: tokens.join('') }],
        finishReason,
        usage: usage(callOptions.prompt, tokens.join('')),
        warnings: [],
      }
    },

    async doStream(callOptions) {
      const signal = callOptions.abortSignal
      if (signal?.aborted) throw abortReason(signal)
      const parts = streamParts(callOptions, style)
      let controller!: ReadableStreamDefaultController<LanguageModelV4StreamPart>
      let timer: ReturnType<typeof setTimeout> | undefined
      let next = 0

      const cleanup = () => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
      }
      // Stop mid-answer: no further parts, no finish part, just the abort error.
      const onAbort = () => {
        cleanup()
        controller.error(abortReason(signal!))
      }
      // Each delta (of text, reasoning or a tool's input) takes msPerToken; the parts that frame them come at once.
      const emit = () => {
        while (next < parts.length) {
          const part = parts[next++]
          controller.enqueue(part)
          if (part.type === 'text-delta' || part.type === 'reasoning-delta' || part.type === 'tool-input-delta') {
            timer = setTimeout(emit, msPerToken)
            return
          }
        }
        cleanup()
        controller.close()
      }

      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        start(c) {
          controller = c
          signal?.addEventListener('abort', onAbort, { once: true })
          controller.enqueue({ type: 'stream-start', warnings: [] })
          controller.enqueue({ type: 'response-metadata', modelId, timestamp: new Date() })
          timer = setTimeout(emit, msPerToken)
        },
        // The consumer walked away (e.g. the HTTP response was cancelled): stop producing.
        cancel: cleanup,
      })

      return { stream }
    },
  }
}

/**
 * Everything one model call streams, in order: reasoning (when asked to think), then either a
 * tool call — its input in fragments, as OpenAI-compatible servers stream `tool_calls` — or the
 * answer's text; then the finish, with usage counted over all of it.
 */
function streamParts(options: LanguageModelV4CallOptions, style: OfflineStyle): LanguageModelV4StreamPart[] {
  const parts: LanguageModelV4StreamPart[] = []
  const reasoning = offlineReasoning(options)
  if (reasoning) {
    parts.push({ type: 'reasoning-start', id: 'reasoning-0' })
    for (const delta of tokenize(reasoning)) parts.push({ type: 'reasoning-delta', id: 'reasoning-0', delta })
    parts.push({ type: 'reasoning-end', id: 'reasoning-0' })
  }
  const call = toolCallFor(options)
  if (call) {
    parts.push({ type: 'tool-input-start', id: call.toolCallId, toolName: call.toolName })
    for (const delta of call.input.match(/[\s\S]{1,6}/g) ?? []) parts.push({ type: 'tool-input-delta', id: call.toolCallId, delta })
    parts.push({ type: 'tool-input-end', id: call.toolCallId })
    parts.push({ type: 'tool-call', toolCallId: call.toolCallId, toolName: call.toolName, input: call.input })
    parts.push({
      type: 'finish',
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage: usage(options.prompt, (reasoning ?? '') + call.input),
    })
    return parts
  }
  const { tokens, finishReason } = answerTokens(options, style)
  parts.push({ type: 'text-start', id: 'text-0' })
  for (const delta of tokens) parts.push({ type: 'text-delta', id: 'text-0', delta })
  parts.push({ type: 'text-end', id: 'text-0' })
  parts.push({ type: 'finish', finishReason, usage: usage(options.prompt, (reasoning ?? '') + tokens.join('')) })
  return parts
}
