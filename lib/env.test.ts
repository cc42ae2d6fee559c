/** The environment: empty values are unset, production needs AUTH_SECRET, a bad value stops the boot with one message. */
import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { InvalidEnvironment, parseEnv, unsetEmptyVariables } from './env'

describe('the environment', () => {
  it('reads an empty value as unset, as compose files write them', () => {
    const e = parseEnv({ OPENAI_API_KEY: '', OPENAI_BASE_URL: '', DATABASE_URL: '', A2_MAX_SESSIONS_PER_USER: '', NODE_ENV: 'development' })
    expect(e.OPENAI_API_KEY).toBeUndefined()
    expect(e.OPENAI_BASE_URL).toBeUndefined()
    expect(e.DATABASE_URL).toBeUndefined()
    expect(e.A2_MAX_SESSIONS_PER_USER).toBe(1_000)
  })

  it('requires AUTH_SECRET in production, and names it', () => {
    expect(() => parseEnv({ NODE_ENV: 'production' })).toThrow(InvalidEnvironment)
    expect(() => parseEnv({ NODE_ENV: 'production', AUTH_SECRET: '' })).toThrow(/AUTH_SECRET is required when NODE_ENV=production/)
    expect(() => parseEnv({ NODE_ENV: 'production', AUTH_SECRET: 'short' })).toThrow(/at least 32 characters/)
    expect(parseEnv({ NODE_ENV: 'production', AUTH_SECRET: 'x'.repeat(32) }).AUTH_SECRET).toBe('x'.repeat(32))
  })

  it('refuses a limit that is not a positive whole number', () => {
    for (const bad of ['0', '-1', '1.5', 'many']) expect(() => parseEnv({ A2_MAX_TAILS_PER_USER: bad }), bad).toThrow(/A2_MAX_TAILS_PER_USER/)
  })

  describe('A2_MODELS, the models on offer', () => {
    const llama = {
      id: 'llama-3.2',
      label: 'Llama 3.2 (local)',
      provider: 'openai',
      baseURL: 'http://127.0.0.1:8080/v1',
      reasoning: false,
      tools: false,
    }
    const offline = { id: 'offline', label: 'Offline', provider: 'offline', reasoning: false, tools: true }

    it('reads a JSON array of models, the first the default; the offline model is an entry like any other', () => {
      const e = parseEnv({ A2_MODELS: JSON.stringify([llama, offline]) })
      expect(e.A2_MODELS).toEqual([llama, offline])
    })

    it('is unset by default: the OPENAI_* variables (or nothing) name the one model', () => {
      expect(parseEnv({ OPENAI_BASE_URL: 'http://127.0.0.1:8080/v1' }).A2_MODELS).toBeUndefined()
    })

    it('names every bad field of every entry in one message, at its place in the list', () => {
      const bad = [
        { id: 'has space', label: '', provider: 'openai', baseURL: 'not a url', reasoning: 'yes' },
        { ...offline, provider: 'ollama' },
      ]
      let message = ''
      try {
        parseEnv({ A2_MODELS: JSON.stringify(bad) })
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidEnvironment)
        message = (error as Error).message
      }
      for (const at of [
        'A2_MODELS[0].id',
        'A2_MODELS[0].label',
        'A2_MODELS[0].baseURL',
        'A2_MODELS[0].reasoning',
        'A2_MODELS[0].tools',
        'A2_MODELS[1].provider',
      ]) {
        expect(message).toContain(`→ at ${at}`)
      }
    })

    it('refuses text that is not JSON, an empty list, an unknown field and an id listed twice', () => {
      expect(() => parseEnv({ A2_MODELS: '{id: llama}' })).toThrow(/A2_MODELS must be JSON/)
      expect(() => parseEnv({ A2_MODELS: '[]' })).toThrow(/A2_MODELS names no model/)
      expect(() => parseEnv({ A2_MODELS: JSON.stringify([{ ...llama, temperature: 0.2 }]) })).toThrow(/temperature[\s\S]*A2_MODELS\[0\]/)
      expect(() => parseEnv({ A2_MODELS: JSON.stringify([llama, { ...offline, id: llama.id }]) })).toThrow(
        /"llama-3.2" is listed twice\n {2}→ at A2_MODELS\[1\]\.id/,
      )
    })

    it('refuses OPENAI_BASE_URL or OPENAI_MODEL beside it (they would be ignored), and OpenAI itself without a key', () => {
      expect(() => parseEnv({ A2_MODELS: JSON.stringify([llama]), OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' })).toThrow(
        /OPENAI_BASE_URL names the one model/,
      )
      expect(() => parseEnv({ A2_MODELS: JSON.stringify([llama]), OPENAI_MODEL: 'x' })).toThrow(/OPENAI_MODEL names the one model/)
      const gpt = { id: 'gpt-4o-mini', label: 'GPT-4o mini', provider: 'openai', reasoning: false, tools: true }
      expect(() => parseEnv({ A2_MODELS: JSON.stringify([gpt]) })).toThrow(/model "gpt-4o-mini" is OpenAI itself[\s\S]*A2_MODELS\[0\]\.apiKey/)
      expect(parseEnv({ A2_MODELS: JSON.stringify([gpt]), OPENAI_API_KEY: 'sk-test' }).A2_MODELS).toEqual([gpt])
    })
  })

  it('stops a booting process with one clear message and exit code 1', () => {
    const script = `import { checkEnvAtBoot } from './lib/env.ts'; checkEnvAtBoot(); console.log('booted')`
    const run = spawnSync('npx', ['tsx', '--eval', script], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NODE_ENV: 'production',
        A2_RATE_PUSHES_PER_MIN: 'lots',
        A2_MODELS: '[{"id":"llama","provider":"openai"}]',
      },
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect(run.status).toBe(1)
    expect(run.stdout).not.toContain('booted')
    expect(run.stderr).toContain('[a2] cannot start: invalid environment')
    expect(run.stderr).toContain('AUTH_SECRET')
    expect(run.stderr).toContain('A2_RATE_PUSHES_PER_MIN')
    expect(run.stderr).toContain('A2_MODELS[0].label')
    expect(run.stderr).not.toMatch(/\n\s+at /) // a message, not a stack trace
  })

  it('unsets every empty variable of the process at boot, whoever reads it: a dependency that reads its own on import sees it unset', () => {
    const source: Record<string, string | undefined> = {
      OPENAI_BASE_URL: '',
      BETTER_AUTH_URL: '  ',
      A2_DATA_DIR: '/tmp/x',
      SOME_DEPENDENCY_S_OWN: '',
    }
    expect(unsetEmptyVariables(source).sort()).toEqual(['BETTER_AUTH_URL', 'OPENAI_BASE_URL', 'SOME_DEPENDENCY_S_OWN'])
    expect(source).toEqual({ A2_DATA_DIR: '/tmp/x' })
    // The worker's order (scripts/worker.ts): the check, then the modules whose dependencies read on import.
    const boot = (check: string) =>
      spawnSync(
        'npx',
        ['tsx', '--eval', `import { checkEnvAtBoot } from './lib/env.ts'; ${check}; import('@ai-sdk/openai').then(() => console.log('booted'))`],
        {
          env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'development', OPENAI_BASE_URL: '', OPENAI_API_KEY: '' },
          encoding: 'utf8',
          timeout: 60_000,
        },
      )
    const unchecked = boot('void checkEnvAtBoot')
    expect(unchecked.stderr).toContain('baseURL must be a non-empty string') // what every request of `npm run dev` met
    const checked = boot('checkEnvAtBoot()')
    expect(checked.stderr).not.toContain('baseURL must be a non-empty string')
    expect(checked.stdout).toContain('booted')
  })
})
