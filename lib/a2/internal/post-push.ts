/**
 * One push over HTTP, as the browser sends it (PROTOCOL.md §2), and what its answer means for
 * a retry: the session store's pushes and the outbox courier's both go through here.
 */
import type { A2Event } from './contract'
import { A2HttpError, httpErrorOf, type A2HttpErrorOptions } from './http-error'
import { brandOf } from './brand'
import { decodeErrorBody, decodePushAnswer, encodePushBody, WireError, type PushedEvent } from './wire'

/** A push the server refused or never got: an A2HttpError with the events it rolled back. */
export class PushError extends A2HttpError {
  static override readonly brand: symbol = brandOf('PushError')

  /** The events that were rolled back, so the UI can offer to retry them. */
  readonly inputs: PushedEvent[]

  constructor(code: string, message: string, inputs: PushedEvent[], options: A2HttpErrorOptions = {}) {
    super(code, message, options)
    this.name = 'PushError'
    this.inputs = inputs
  }

  static of(error: A2HttpError, inputs: PushedEvent[]): PushError {
    return new PushError(error.code, error.message, inputs, { status: error.status, retryAfterS: error.retryAfterS, cause: error.cause })
  }
}

/** Network errors, 5xx, 408 and 429 may pass (`retry`); any other refusal is `final`. */
export type PushOutcome = { kind: 'ok'; events: A2Event[] } | { kind: 'retry' | 'final'; error: PushError }

/**
 * One POST of `inputs` to a session's events route. `keepalive` asks the browser to finish the
 * send after its page is gone: what a durable push (a Stop) is sent with, so one on its way
 * when its tab closes still arrives.
 */
export async function postPush(
  doFetch: typeof fetch,
  url: string,
  inputs: PushedEvent[],
  options: { keepalive?: boolean } = {},
): Promise<PushOutcome> {
  const body = encodePushBody(inputs)
  let response: Response
  try {
    const init: RequestInit = { method: 'POST', headers: { 'content-type': 'application/json' }, body }
    if (options.keepalive) init.keepalive = true
    response = await doFetch(url, init)
  } catch (cause) {
    return { kind: 'retry', error: new PushError('network', 'could not reach the server', inputs, { cause }) }
  }
  const json: unknown = await response.json().catch(() => undefined)
  if (response.ok) {
    try {
      return { kind: 'ok', events: decodePushAnswer(json).events }
    } catch (error) {
      // An answer that is not one (a proxy's page): the push may have landed; the id makes a repeat a no-op.
      console.error('[a2] push: the answer is not one:', error instanceof WireError ? error.message : error)
    }
  }
  const refusal = decodeErrorBody(json)
  const retryable = response.status >= 500 || response.status === 408 || response.status === 429
  return { kind: retryable ? 'retry' : 'final', error: PushError.of(httpErrorOf(response, refusal ? { error: refusal } : undefined), inputs) }
}
