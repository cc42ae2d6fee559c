/**
 * Diagnostic: CPU per token of consuming a model's stream the ways `generate` could, at
 * figure 2's load (100 streams of 50 tokens at 50 tokens/s), with the upstream stand-in on
 * a process of its own so only the consumer is measured (this process's CPU / tokens).
 *
 *   npx tsx bench/diagnostics/model-stream-cpu.ts [rounds=3] [streams=100]
 *
 * Variants: streamText's stream (what generate reads), its textStream, its onChunk
 * callback with consumeStream(), stream without tools, and as floors for comparison
 * (the app's design calls streamText) the provider's doStream read directly and a bare
 * fetch reading the bytes. VARIANTS=a,b picks some. 2026-12-01, 100 streams: stream 257,
 * textStream 245, doStream 122, fetch 46 µs a token (3 rounds, load ~2-5); then stream
 * 174, textStream 148, onChunk 167, no tools 176 (6 rounds, load ~8: spread 111-326, so no
 * way of reading streamText is measurably cheaper than another).
 */
import { fork } from 'node:child_process'
import path from 'node:path'
import { createOpenAI } from '@ai-sdk/openai'
import { streamText, isStepCount, tool } from 'ai'
import { z } from 'zod'

const [roundsArg = '3', streamsArg = '100'] = process.argv.slice(2)
const ROUNDS = Number(roundsArg)
const STREAMS = Number(streamsArg)
const TOKENS = 50
const PORT = 4000 + (process.pid % 1000)

const upstream = fork(path.join(process.cwd(), 'scripts/upstream-server.ts'), [], {
  execArgv: ['--import', 'tsx'],
  env: { ...process.env, PORT: String(PORT), UPSTREAM_TOKEN_MS: '20', UPSTREAM_TOKENS: String(TOKENS) },
  stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
})
process.on('exit', () => upstream.kill())
await new Promise<void>((resolve) => upstream.stdout!.on('data', (d) => String(d).includes('listening') && resolve()))

const baseURL = `http://127.0.0.1:${PORT}/v1`
const model = createOpenAI({ apiKey: 'bench', baseURL }).chat('bench')
const tools = { saveNote: tool({ description: 'x', inputSchema: z.object({ note: z.string() }), execute: async () => ({ saved: true }) }) }
const messages = [{ role: 'user' as const, content: 'hello' }]

type Variant = (signal: AbortSignal) => Promise<number>
const only = process.env.VARIANTS?.split(',')
const variants: Record<string, Variant> = {
  stream: async (signal) => {
    const r = streamText({ model, messages, abortSignal: signal, tools, stopWhen: isStepCount(3), maxRetries: 0 })
    let n = 0
    for await (const part of r.stream) if (part.type === 'text-delta') n++
    return n
  },
  textStream: async (signal) => {
    const r = streamText({ model, messages, abortSignal: signal, tools, stopWhen: isStepCount(3), maxRetries: 0 })
    let n = 0
    for await (const _ of r.textStream) n++
    return n
  },
  onChunk: async (signal) => {
    let n = 0
    const r = streamText({
      model,
      messages,
      abortSignal: signal,
      tools,
      stopWhen: isStepCount(3),
      maxRetries: 0,
      onChunk: ({ chunk }) => {
        if (chunk.type === 'text-delta') n++
      },
    })
    await r.consumeStream()
    return n
  },
  noTools: async (signal) => {
    const r = streamText({ model, messages, abortSignal: signal, maxRetries: 0 })
    let n = 0
    for await (const part of r.stream) if (part.type === 'text-delta') n++
    return n
  },
  doStream: async (signal) => {
    const { stream } = await model.doStream({
      prompt: messages.map((m) => ({ role: m.role, content: [{ type: 'text' as const, text: m.content }] })),
      abortSignal: signal,
    })
    let n = 0
    const reader = stream.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      if (value.type === 'text-delta') n++
    }
    return n
  },
  fetch: async (signal) => {
    const res = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'bench', messages, stream: true }),
      signal,
      headers: { 'content-type': 'application/json' },
    })
    let n = 0
    const decoder = new TextDecoder()
    const reader = res.body!.getReader()
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      n += decoder.decode(next.value, { stream: true }).split('"content":"tok').length - 1
    }
    return n
  },
}

const results: Record<string, number[]> = {}
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, run] of Object.entries(variants).filter(([name]) => !only || only.includes(name))) {
    await run(new AbortController().signal) // warm
    const before = process.cpuUsage()
    const counts = await Promise.all(
      Array.from({ length: STREAMS }, async () => {
        await new Promise((r) => setTimeout(r, Math.random() * 500))
        return run(new AbortController().signal)
      }),
    )
    const cpu = process.cpuUsage(before)
    const tokens = counts.reduce((a, b) => a + b, 0)
    const us = (cpu.user + cpu.system) / tokens
    ;(results[name] ??= []).push(us)
    console.log(`round ${round} ${name.padEnd(10)} ${tokens} tokens, ${us.toFixed(0)} µs CPU per token`)
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const [name, xs] of Object.entries(results))
  console.log(`${name.padEnd(10)} median ${median(xs).toFixed(0)} µs/token (${xs.map((x) => x.toFixed(0)).join(', ')})`)
upstream.kill()
process.exit(0)
