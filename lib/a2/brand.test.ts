import { describe, expect, it, vi } from 'vitest'

describe('errors across module copies (as Next loads instrumentation and routes)', () => {
  it('matches A2Error, its subclasses and RunAborted by brand, not by class identity', async () => {
    const first = await import('./internal/runtime/effects')
    const firstErrors = await import('./internal/core/errors')
    const firstAbort = await import('./internal/core/abort')
    vi.resetModules() // a second, separate copy of every module
    const second = await import('./internal/runtime/effects')
    const secondErrors = await import('./internal/core/errors')
    const secondAbort = await import('./internal/core/abort')
    expect(second.EffectNotDispatched).not.toBe(first.EffectNotDispatched)

    const thrown = new first.EffectNotDispatched('k')
    expect(thrown instanceof secondErrors.A2Error).toBe(true)
    expect(thrown instanceof second.EffectNotDispatched).toBe(true)
    expect(thrown instanceof second.EffectUnknown).toBe(false)
    expect(new firstErrors.A2Error('forbidden', 'x') instanceof second.EffectNotDispatched).toBe(false)
    expect(secondErrors.isA2Error(new firstErrors.A2Error('forbidden', 'x'), 'forbidden')).toBe(true)
    expect(new firstAbort.RunAborted('CANCELLED') instanceof secondAbort.RunAborted).toBe(true)
    expect(new Error('plain') instanceof secondErrors.A2Error).toBe(false)
  })

  it('matches NotRetryable by brand: a handler of one copy tells the runtime of another not to retry', async () => {
    const first = await import('./internal/core/not-retryable')
    vi.resetModules()
    const second = await import('./internal/core/not-retryable')
    expect(second.NotRetryable).not.toBe(first.NotRetryable)
    expect(new first.NotRetryable('refused') instanceof second.NotRetryable).toBe(true)
    expect(new Error('plain') instanceof second.NotRetryable).toBe(false)
  })

  it('matches the client errors (A2HttpError, PushError) by brand too', async () => {
    const first = await import('./internal/browser/session-store')
    const firstHttp = await import('./internal/core/http-error')
    vi.resetModules()
    const second = await import('./internal/browser/session-store')
    const secondHttp = await import('./internal/core/http-error')
    expect(second.PushError).not.toBe(first.PushError)

    const pushError = new first.PushError('rate_limited', 'slow down', [], { status: 429 })
    expect(pushError instanceof secondHttp.A2HttpError).toBe(true)
    expect(pushError instanceof second.PushError).toBe(true)
    expect(new firstHttp.A2HttpError('network', 'x') instanceof second.PushError).toBe(false)
    expect(new firstHttp.A2HttpError('network', 'x') instanceof secondHttp.A2HttpError).toBe(true)
  })
})
