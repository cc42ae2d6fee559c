/** Which model-call failures are retried, and the one line each becomes. */
import { APICallError } from 'ai'
import { describe, expect, it } from 'vitest'
import { NotRetryable } from '@/lib/a2/server'
import { modelErrorLine, modelFailure } from './model-failure'

const refusal = (statusCode: number, message = 'no') =>
  new APICallError({ message, url: 'http://127.0.0.1:8080/v1/chat/completions', requestBodyValues: { messages: [] }, statusCode })

describe('a failed model call', () => {
  it.each([400, 401, 403, 404, 413, 422])('%i: not retried, one short line with the status, the cause kept', (status) => {
    const cause = refusal(status, 'tools param requires --jinja flag')
    const failure = modelFailure(cause)
    expect(failure).toBeInstanceOf(NotRetryable)
    expect(failure).toMatchObject({
      message: `The model server refused the request (${status}): tools param requires --jinja flag`,
      code: `model_http_${status}`,
    })
    expect((failure as Error).cause).toBe(cause)
  })

  it.each([408, 409, 429, 500, 502, 503])('%i: thrown as it came, so the runtime retries it', (status) => {
    const error = refusal(status)
    expect(modelFailure(error)).toBe(error)
  })

  it('anything but a provider call error (a network error, a broken stream) is retried', () => {
    const error = new TypeError('fetch failed')
    expect(modelFailure(error)).toBe(error)
    expect(modelFailure(new APICallError({ message: 'socket hang up', url: 'x', requestBodyValues: {} }))).toBeInstanceOf(APICallError)
  })

  it('a long or many-line message becomes one line of at most 200 characters', () => {
    const failure = modelFailure(refusal(400, `line one\n  line two\n${'x'.repeat(400)}`)) as Error
    expect(failure.message).not.toContain('\n')
    expect(failure.message.length).toBeLessThanOrEqual('The model server refused the request (400): '.length + 200)
    expect(modelErrorLine(refusal(400, 'a\nb'))).toBe('model call failed (400): a b')
    expect(modelErrorLine(new Error('boom\n    at stack'))).toBe('model call failed: boom at stack')
  })
})
