/** The environment: empty values are unset, production needs AUTH_SECRET, a bad value stops the boot with one message. */
import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { InvalidEnvironment, parseEnv } from './env'

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

  it('stops a booting process with one clear message and exit code 1', () => {
    const script = `import { checkEnvAtBoot } from './lib/env.ts'; checkEnvAtBoot(); console.log('booted')`
    const run = spawnSync('npx', ['tsx', '--eval', script], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production', A2_RATE_PUSHES_PER_MIN: 'lots' },
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect(run.status).toBe(1)
    expect(run.stdout).not.toContain('booted')
    expect(run.stderr).toContain('[a2] cannot start: invalid environment')
    expect(run.stderr).toContain('AUTH_SECRET')
    expect(run.stderr).toContain('A2_RATE_PUSHES_PER_MIN')
    expect(run.stderr).not.toMatch(/\n\s+at /) // a message, not a stack trace
  })
})
