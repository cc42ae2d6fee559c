/** Model selection reads the validated configuration (lib/env.ts): A2_MODELS, or a key, a base URL, or neither. */
import { afterEach, describe, expect, it } from 'vitest'
import { streamText } from 'ai'
import { REASONING, startUpstream, type Upstream } from '@/scripts/upstream-server'
import { resetEnvForTests } from '@/lib/env'
import { modelList, selectModel, selectModels } from './model'

describe('selectModel', () => {
  let upstream: Upstream | undefined
  const saved = { ...process.env }
  afterEach(async () => {
    await upstream?.close()
    upstream = undefined
    for (const key of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'OPENAI_MODEL', 'OFFLINE_MS_PER_TOKEN']) {
      if (saved[key] === undefined) delete process.env[key]
      else process.env[key] = saved[key]
    }
    resetEnvForTests()
  })

  it('without a key or a base URL: the offline model', () => {
    expect(selectModel({}).label).toBe('Offline')
  })

  it('a base URL without a key (llama.cpp, Ollama): that server, not the offline model', async () => {
    upstream = await startUpstream({ tokenMs: 0, tokens: 3 })
    const { model, label } = selectModel({ OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'local' })
    expect(label).toBe('local')
    const text = await streamText({ model, prompt: 'hi' }).text
    expect(text).toBe('tok0 tok1 tok2 ')
    expect(upstream.requests).toHaveLength(1)
    expect(upstream.requests[0].body.model).toBe('local')
  })

  it('a server at a base URL: its `reasoning_content` deltas arrive as reasoning, its text as text (the compatible provider)', async () => {
    upstream = await startUpstream({ tokenMs: 0, tokens: 2 })
    const { model } = selectModel({ OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'local' })
    const result = streamText({ model, prompt: 'think first [[reasons]]' })
    const kinds: string[] = []
    let reasoning = ''
    for await (const part of result.stream) {
      if (part.type === 'reasoning-delta') reasoning += part.text
      if (part.type === 'reasoning-delta' || part.type === 'text-delta') kinds.push(part.type)
    }
    expect(reasoning).toBe(REASONING)
    expect(kinds.indexOf('text-delta')).toBeGreaterThan(kinds.lastIndexOf('reasoning-delta'))
    expect(await result.text).toBe('tok0 tok1 ')
  })

  it('A2_MODELS: every entry built, the first the default, its capabilities as configured; a local server gets no OpenAI key', async () => {
    upstream = await startUpstream({ tokenMs: 0, tokens: 2 })
    const models = selectModels({
      OPENAI_API_KEY: 'sk-openai-only',
      A2_MODELS: [
        { id: 'llama', label: 'Llama (local)', provider: 'openai', baseURL: upstream.url, model: 'llama-3.2-1b', reasoning: true, tools: false },
        { id: 'offline', label: 'Offline', provider: 'offline', reasoning: false, tools: true },
      ],
    })
    expect(models.map(({ id, label, reasoning, tools }) => ({ id, label, reasoning, tools }))).toEqual([
      { id: 'llama', label: 'Llama (local)', reasoning: true, tools: false },
      { id: 'offline', label: 'Offline', reasoning: false, tools: true },
    ])
    expect(selectModel({ A2_MODELS: models.map((m) => ({ ...m, provider: 'offline' as const })) }).id).toBe('llama')

    expect(await streamText({ model: models[0].model, prompt: 'hi' }).text).toBe('tok0 tok1 ')
    expect(upstream.requests[0].body.model).toBe('llama-3.2-1b')
    expect(upstream.requests[0].headers.authorization).toBe('Bearer keyless')
  })

  it("without A2_MODELS, today's variables are the one entry: sent tools, as before", () => {
    expect(modelList({ OPENAI_API_KEY: 'sk', OPENAI_MODEL: 'gpt-4o' })).toEqual([
      { id: 'gpt-4o', label: 'gpt-4o', provider: 'openai', baseURL: undefined, apiKey: 'sk', reasoning: false, tools: true },
    ])
  })

  it('with nothing configured: two offline models, the full one first, so the picker offers a choice with no network', async () => {
    expect(modelList({})).toEqual([
      { id: 'offline', label: 'Offline', provider: 'offline', reasoning: false, tools: true },
      { id: 'offline-brief', label: 'Offline, brief', provider: 'offline', style: 'brief', reasoning: false, tools: true },
    ])
    const [full, brief] = selectModels({ OFFLINE_MS_PER_TOKEN: 0 })
    const prompt = 'How do leases work?'
    const fullText = await streamText({ model: full.model, prompt }).text
    const briefText = await streamText({ model: brief.model, prompt }).text
    // The brief model says the full answer's opening and first paragraph, and stops there.
    expect(briefText.length).toBeGreaterThan(0)
    expect(briefText.length).toBeLessThan(fullText.length)
    expect(fullText.startsWith(briefText)).toBe(true)
  })

  it('reads the configuration through env(), where empty values are unset', () => {
    process.env.OPENAI_API_KEY = ''
    process.env.OPENAI_BASE_URL = 'http://127.0.0.1:9/v1'
    process.env.OPENAI_MODEL = 'from-env'
    resetEnvForTests()
    expect(selectModel().label).toBe('from-env')

    delete process.env.OPENAI_BASE_URL
    resetEnvForTests()
    expect(selectModel().label).toBe('Offline')
  })
})
