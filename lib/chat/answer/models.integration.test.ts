/**
 * Configured models against a real model server's refusals, through the real provider path
 * (@ai-sdk/openai's chat model against the test upstream), on both stores: a model configured
 * without tools is sent none (llama.cpp without --jinja refuses them); a refusal (4xx) is
 * attempted once and ends the answer with one short line, in the view and in the server's log;
 * a 429 is retried; reasoning deltas before the answer are no error.
 */
import { inspect } from 'node:util'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest'
import { waitForRun, waitUntil } from '@/lib/a2/testing'
import type { ModelEntry } from '@/lib/ai/model-list'
import { layers } from '@/test/db'
import { ask, useTestStore } from '@/test/chat'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { buildChatServer } from '../server/chat-server'
import type { ChatEvent } from '../contract'
import { answerText, foldChat, type AnswerTurn } from '../fold/reducer'

describe.each(layers)('configured models against a refusing server on %s', (kind) => {
  const store = useTestStore(kind)
  let upstream: Upstream
  let chat: ReturnType<typeof buildChatServer> | undefined
  let errors: MockInstance<typeof console.error>
  let warnings: MockInstance<typeof console.warn>

  beforeAll(async () => {
    // As llama-server runs without --jinja: every request that carries `tools` is refused (400).
    upstream = await startUpstream({ tokenMs: 1, tokens: 5, refuseTools: true })
  })
  afterAll(async () => {
    await upstream.close()
  })
  beforeEach(() => {
    errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    warnings = vi.spyOn(console, 'warn').mockImplementation(() => {})
  })
  afterEach(async () => {
    await chat?.server.stopWorkers()
    chat = undefined
    vi.restoreAllMocks()
  })

  async function serve(entry: Partial<ModelEntry>) {
    const model = {
      id: 'llama',
      label: 'Llama (local)',
      provider: 'openai',
      baseURL: upstream.url,
      reasoning: false,
      tools: false,
      ...entry,
    } as ModelEntry
    chat = buildChatServer(store(), { A2_MODELS: [model] })
    await chat.server.startWorker({ pollMs: 50 })
    return chat.server
  }

  /** Asks in a new session and returns the log once the answer ended (finished, or failed for good), and its run. */
  async function answer(text: string) {
    const server = chat!.server
    const id = await ask(server, 'dana', text)
    const run = await waitForRun(store(), { sessionId: id, eventId: 'g1', consumer: 'generate' }, ['COMPLETED', 'FAILED', 'CANCELLED', 'UNKNOWN'])
    const log = (await waitUntil(async () => {
      const events = await server.read(id, 'dana', { limit: 10_000 })
      return events.some((e) => e.type === 'finished' || e.type === 'a2.failed') ? events : undefined
    }, 'the answer to end')) as ChatEvent[]
    return { run, log, turn: foldChat(log).turns[1] as AnswerTurn }
  }

  /** What this test printed to the server's log (console.error and console.warn), one string per call. */
  const printed = () =>
    [...errors.mock.calls, ...warnings.mock.calls].map((args) => args.map((a) => (typeof a === 'string' ? a : inspect(a))).join(' '))
  const refusedFor = (nonce: string) => upstream.refused.filter((r) => JSON.stringify(r.body).includes(nonce))

  it('a model configured without tools is sent none: the refusing server answers normally, once', async () => {
    await serve({ tools: false })
    const { run, turn } = await answer('hello there (no tools)')
    expect(turn.status).toBe('done')
    expect(answerText(turn)).toBe('tok0 tok1 tok2 tok3 tok4 ')
    expect(run).toMatchObject({ status: 'COMPLETED', attempt: 1 })
    const request = upstream.requests.find((r) => JSON.stringify(r.body).includes('(no tools)'))!
    expect(request.body.tools).toBeUndefined()
    expect(refusedFor('(no tools)')).toEqual([])
    expect(printed()).toEqual([])
  })

  it('a refusal (400: tools param requires --jinja flag) is attempted once; the answer ends with one short line, and so does the log', async () => {
    await serve({ tools: true })
    const { run, log, turn } = await answer('hello there (tools refused)')
    expect(refusedFor('(tools refused)').map((r) => r.status)).toEqual([400])
    expect(run).toMatchObject({ status: 'FAILED', attempt: 1 })
    const failed = log.filter((e) => e.type === 'a2.failed')
    expect(failed.map((e) => e.payload)).toEqual([
      {
        of: 'g1',
        consumer: 'generate',
        attempts: 1,
        error: { message: 'The model server refused the request (400): tools param requires --jinja flag', code: 'model_http_400' },
      },
    ])
    expect(turn.status).toBe('failed')
    expect(turn.error).toBe('The model server refused the request (400): tools param requires --jinja flag')
    // One line in the server's log, no stack, no request dump (the SDK's default printed ~60 lines per attempt).
    expect(printed()).toHaveLength(1)
    expect(printed()[0]).not.toContain('\n')
    expect(printed()[0]).toContain('tools param requires --jinja flag')
  })

  it.each([
    [400, 'maximum context length'],
    [401, 'Incorrect API key'],
  ])('a %i from the model server is not retried: one request, the answer failed with its short line', async (status, words) => {
    await serve({ tools: false })
    const nonce = `(status ${status})`
    const { run, turn } = await answer(`too long ${nonce} [[fail 3 ${status}]]`)
    expect(refusedFor(nonce).map((r) => r.status)).toEqual([status])
    expect(run).toMatchObject({ status: 'FAILED', attempt: 1 })
    expect(turn.status).toBe('failed')
    expect(turn.error).toMatch(new RegExp(`^The model server refused the request \\(${status}\\): .*${words}`))
    expect(printed()).toHaveLength(1)
  })

  it('a 429 is retried with backoff, and the next attempt answers', async () => {
    await serve({ tools: false })
    const { run, turn } = await answer('busy (rate limited) [[fail 1 429]]')
    expect(refusedFor('(rate limited)').map((r) => r.status)).toEqual([429])
    expect(run).toMatchObject({ status: 'COMPLETED', attempt: 2 })
    expect(turn.status).toBe('done')
    expect(answerText(turn)).toBe('tok0 tok1 tok2 tok3 tok4 ')
  })

  it('reasoning_content deltas before the answer are no error: the answer is its content', async () => {
    await serve({ reasoning: true, tools: false })
    const { run, turn } = await answer('why? (reasons) [[reasons]]')
    expect(run).toMatchObject({ status: 'COMPLETED', attempt: 1 })
    expect(turn.status).toBe('done')
    expect(answerText(turn)).toBe('tok0 tok1 tok2 tok3 tok4 ')
    expect(printed()).toEqual([])
  })
})
