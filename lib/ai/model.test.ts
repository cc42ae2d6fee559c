/** Model selection reads the validated configuration (lib/env.ts): a key, a base URL, or neither. */
import { afterEach, describe, expect, it } from 'vitest'
import { streamText } from 'ai'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { resetEnvForTests } from '@/lib/env'
import { selectModel } from './model'

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
    expect(selectModel({}).label).toBe('a2-offline/offline')
  })

  it('a base URL without a key (llama.cpp, Ollama): that server, not the offline model', async () => {
    upstream = await startUpstream({ tokenMs: 0, tokens: 3 })
    const { model, label } = selectModel({ OPENAI_BASE_URL: upstream.url, OPENAI_MODEL: 'local' })
    expect(label).toBe('openai/local')
    const text = await streamText({ model, prompt: 'hi' }).text
    expect(text).toBe('tok0 tok1 tok2 ')
    expect(upstream.requests).toHaveLength(1)
    expect(upstream.requests[0].body.model).toBe('local')
  })

  it('reads the configuration through env(), where empty values are unset', () => {
    process.env.OPENAI_API_KEY = ''
    process.env.OPENAI_BASE_URL = 'http://127.0.0.1:9/v1'
    process.env.OPENAI_MODEL = 'from-env'
    resetEnvForTests()
    expect(selectModel().label).toBe('openai/from-env')

    delete process.env.OPENAI_BASE_URL
    resetEnvForTests()
    expect(selectModel().label).toBe('a2-offline/offline')
  })
})
