import { generateText, isStepCount, streamText, tool, type ModelMessage } from 'ai'
import { z } from 'zod'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createOfflineModel, offlineAnswer } from './offline-model'
import { STARTERS } from './starters'
import { countText } from './usage'

const prompt = 'How does pressing Stop cancel the model call on the server?'

// Timers created from now on that have neither fired nor been cleared. Counting the
// process's active timers instead would be swamped by the test runner's own.
function trackPendingTimers(): Set<unknown> {
  const pending = new Set<unknown>()
  const realSetTimeout = globalThis.setTimeout
  const realClearTimeout = globalThis.clearTimeout
  vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const handle = realSetTimeout(() => {
      pending.delete(handle)
      fn(...args)
    }, ms)
    pending.add(handle)
    return handle
  }) as unknown as typeof setTimeout)
  vi.spyOn(globalThis, 'clearTimeout').mockImplementation((handle) => {
    pending.delete(handle)
    realClearTimeout(handle)
  })
  return pending
}

afterEach(() => {
  vi.restoreAllMocks()
})

describe('offlineAnswer', () => {
  it('is deterministic and readable prose', () => {
    const text = offlineAnswer(prompt)
    expect(offlineAnswer(prompt)).toBe(text)
    const words = text.split(/\s+/).filter(Boolean)
    expect(words.length).toBeGreaterThan(100)
    expect(words.length).toBeLessThan(260)
    expect(text).toContain('pressing Stop cancel the model call')
  })

  it('varies with the prompt', () => {
    const answers = new Set(Array.from({ length: 20 }, (_, i) => offlineAnswer(`question ${i}`)))
    expect(answers.size).toBeGreaterThan(10)
  })
})

/** What Markdown each kind of answer must contain, as the renderer will see it. */
const shows = {
  list: (text: string) => (text.match(/^\d+\. \S/gm) ?? []).length >= 3,
  code: (text: string) => /^```(ts|typescript)\n[\s\S]*\n```$/m.test(text),
  table: (text: string) => /^\|.*\|\n\|(\s*:?-{3,}:?\s*\|)+\n(\|.*\|\n?){3,}/m.test(text),
  poem: (text: string) => (text.match(/^[^\n]{10,70} {2}$/gm) ?? []).length >= 4,
}

describe('the starters on "/"', () => {
  it.each(STARTERS.map((s) => [s.title, s] as const))('"%s" is answered with what it promises', (_title, starter) => {
    const text = offlineAnswer(starter.prompt)
    expect(shows[starter.shows](text), text).toBe(true)
    // …and only that: the other kinds are not thrown in.
    for (const kind of Object.keys(shows) as Array<keyof typeof shows>) {
      if (kind !== starter.shows && kind !== 'list') expect(shows[kind](text), `${starter.title} shows no ${kind}`).toBe(false)
    }
  })

  it('answers the code starter with a debounce that has cancel(), and shows how to use it', () => {
    const text = offlineAnswer(STARTERS.find((s) => s.shows === 'code')!.prompt)
    expect(text).toMatch(/function debounce/)
    expect(text).toMatch(/cancel\(\)/)
  })

  it('answers the table starter with both technologies as columns', () => {
    const text = offlineAnswer(STARTERS.find((s) => s.shows === 'table')!.prompt)
    expect(text).toMatch(/^\|[^\n]*Server-Sent Events[^\n]*WebSockets[^\n]*\|$/m)
  })

  it('asked for a table, a list or code on any topic, the answer has one', () => {
    expect(shows.table(offlineAnswer('Put the trade-offs of leases in a table'))).toBe(true)
    expect(shows.code(offlineAnswer('Show me some code for idempotency keys'))).toBe(true)
    expect(shows.list(offlineAnswer('List the steps to add retries with backoff'))).toBe(true)
  })
})

describe('createOfflineModel', () => {
  it('streams the deterministic answer word by word through streamText', async () => {
    const result = streamText({ model: createOfflineModel({ msPerToken: 1 }), prompt })
    const deltas: string[] = []
    for await (const delta of result.textStream) deltas.push(delta)

    expect(deltas.join('')).toBe(offlineAnswer(prompt))
    expect(deltas.length).toBeGreaterThan(100)
    for (const delta of deltas) expect(delta).toMatch(/^\s*\S+\s*$/)
    expect(await result.finishReason).toBe('stop')
    // Usage is BPE tokens of what streamed (o200k_base), as a real server counts, not the words it paced out.
    expect((await result.usage).outputTokens).toBe(countText(deltas.join('')))
    expect((await result.usage).inputTokens).toBeGreaterThan(0)
  })

  it('paces tokens msPerToken apart', async () => {
    const controller = new AbortController()
    const result = streamText({ model: createOfflineModel({ msPerToken: 10 }), prompt, abortSignal: controller.signal })
    const times: number[] = []
    for await (const _ of result.textStream) {
      times.push(performance.now())
      // Breaking out alone would leave the model running: streamText tees its output,
      // so only the abort signal reaches the model.
      if (times.length === 11) break
    }
    controller.abort()
    // Ten gaps of 10 ms; allow for timer granularity on the low side.
    expect(times[10] - times[0]).toBeGreaterThanOrEqual(90)
  })

  it('returns the whole answer from generateText', async () => {
    const { text, finishReason } = await generateText({ model: createOfflineModel(), prompt })
    expect(text).toBe(offlineAnswer(prompt))
    expect(finishReason).toBe('stop')
  })

  it('stops at maxOutputTokens with finish reason length', async () => {
    const result = streamText({ model: createOfflineModel({ msPerToken: 1 }), prompt, maxOutputTokens: 5 })
    expect((await result.text).split(/\s+/).filter(Boolean)).toHaveLength(5)
    expect(await result.finishReason).toBe('length')
  })

  it('ends promptly on abort, with no further deltas and no timer left', async () => {
    const pendingTimers = trackPendingTimers()
    const controller = new AbortController()
    const result = streamText({
      model: createOfflineModel({ msPerToken: 50 }),
      prompt,
      abortSignal: controller.signal,
    })

    let deltas = 0
    let deltasAfterAbort = 0
    let abortedAt = 0
    const types: string[] = []
    for await (const part of result.stream) {
      types.push(part.type)
      if (part.type !== 'text-delta') continue
      if (abortedAt) deltasAfterAbort++
      if (++deltas === 3) {
        abortedAt = performance.now()
        controller.abort()
      }
    }
    const endedAfter = performance.now() - abortedAt

    expect(endedAfter).toBeLessThan(200)
    expect(deltasAfterAbort).toBe(0)
    expect(types.at(-1)).toBe('abort')
    expect(types).not.toContain('finish')
    expect(pendingTimers.size).toBe(0)
  })

  it('errors its raw stream with the abort reason, like an aborted fetch', async () => {
    const controller = new AbortController()
    const { stream } = await createOfflineModel({ msPerToken: 5 }).doStream({
      prompt: [{ role: 'user', content: [{ type: 'text', text: prompt }] }],
      abortSignal: controller.signal,
    })
    const reader = stream.getReader()
    while ((await reader.read()).value?.type !== 'text-delta');
    controller.abort()
    await expect(reader.read()).rejects.toMatchObject({ name: 'AbortError' })
  })

  it('treats an already-aborted signal as an abort, not a hang', async () => {
    const result = streamText({
      model: createOfflineModel({ msPerToken: 1 }),
      prompt,
      abortSignal: AbortSignal.abort(),
    })
    const types: string[] = []
    for await (const part of result.stream) types.push(part.type)
    expect(types).not.toContain('text-delta')
    expect(types.at(-1)).toBe('abort')
  })
})

describe('continuing an interrupted answer', () => {
  const streamed = async (messages: ModelMessage[]) => {
    const result = streamText({ model: createOfflineModel({ msPerToken: 0 }), messages })
    let text = ''
    for await (const delta of result.textStream) text += delta
    return text
  }

  it('says only the rest when the prompt ends with the answer so far', async () => {
    const full = offlineAnswer(prompt)
    const soFar = full.split(' ').slice(0, 17).join(' ') + ' '
    const rest = await streamed([
      { role: 'user', content: prompt },
      { role: 'assistant', content: soFar },
    ])
    expect(rest.length).toBeGreaterThan(0)
    expect(soFar + rest).toBe(full)
  })

  it('continues after as many words when the answer so far is not its own', async () => {
    const full = offlineAnswer(prompt)
    const rest = await streamed([
      { role: 'user', content: prompt },
      { role: 'assistant', content: 'one two three ' },
    ])
    expect(rest).toBe(
      full.slice(
        full
          .split(/(?<=\s)(?=\S)/)
          .slice(0, 3)
          .join('').length,
      ),
    )
  })
})

describe('parts: reasoning and tool calls', () => {
  /** The starter's prompt streamed with the chat's read-only tool on offer, returning `notes`. */
  async function partsOf(text: string, notes: string[]) {
    const result = streamText({
      model: createOfflineModel({ msPerToken: 0 }),
      prompt: text,
      tools: { listNotes: tool({ inputSchema: z.object({ limit: z.number().optional() }), execute: async () => notes }) },
      stopWhen: isStepCount(3),
    })
    const kinds: string[] = []
    let input = ''
    for await (const part of result.stream) {
      if (part.type === 'tool-input-delta') input += part.delta
      if (kinds.at(-1) !== part.type) kinds.push(part.type)
    }
    return { kinds, input, text: await result.text, usage: await result.totalUsage }
  }

  it.each(STARTERS.filter((s) => s.parts).map((s) => [s.title, s] as const))('"%s" streams the parts it promises', async (_title, starter) => {
    const { kinds } = await partsOf(starter.prompt, ['buy milk'])
    expect(kinds.includes('reasoning-delta')).toBe(starter.parts!.includes('reasoning'))
    expect(kinds.includes('tool-call')).toBe(starter.parts!.includes('tool'))
  })

  it('reasons, streams the call’s input in fragments, then answers from the tool’s result; usage counts every part', async () => {
    const { kinds, input, text, usage } = await partsOf('Think first, then look up my saved notes and list them.', ['buy milk', 'call Ada'])
    expect(kinds.filter((k) => ['reasoning-delta', 'tool-input-delta', 'tool-call', 'tool-result', 'text-delta'].includes(k))).toEqual([
      'reasoning-delta',
      'tool-input-delta',
      'tool-call',
      'tool-result',
      'text-delta',
    ])
    expect(JSON.parse(input)).toEqual({ limit: 10 })
    expect(text).toContain('- buy milk\n- call Ada')
    expect(usage.outputTokens).toBeGreaterThan(countText(text))
  })

  it('without the tool on offer, answers in text (the reasoning says no tool is needed)', async () => {
    const result = streamText({ model: createOfflineModel({ msPerToken: 0 }), prompt: 'Think first, then look up my saved notes and list them.' })
    expect(await result.reasoningText).toContain('No tool is needed')
    expect(await result.text).toMatch(/^\d\. /m)
  })
})
