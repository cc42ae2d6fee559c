/**
 * One push over HTTP, as the browser sends it (PROTOCOL.md §9.1, §11), and what its answer means for
 * a retry: the session store's pushes and the outbox courier's both go through here.
 */
import type { A2Event } from '../core/contract'
import { A2HttpError, httpErrorOf, type A2HttpErrorOptions } from '../core/http-error'
import { brandOf } from '../core/brand'
import { decodeErrorBody, decodePushAnswer, encodePushBody, WireError, type PushedEvent } from '../core/wire'

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

/**
 * `ok`: the app acknowledged every pushed id. `final`: the app itself refused the push (a 4xx
 * other than 408/429 carrying its typed error body). Anything else may pass (`retry`): network
 * errors, 5xx, 408, 429, and every answer that is not the app's — a captive portal's or an SSO
 * proxy's page (a 2xx, often behind a redirect), a proxy's own 4xx page, JSON that does not
 * name the pushed ids. The push may have landed; its ids make a repeat a no-op.
 */
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
    const acknowledged = acknowledgement(json, inputs)
    if (acknowledged) return { kind: 'ok', events: acknowledged }
    return { kind: 'retry', error: notTheApp(response, inputs) }
  }
  const refusal = decodeErrorBody(json)
  // A 4xx without the app's error body is someone else's page (a proxy's, a portal's): not the app's refusal.
  if (!refusal) return { kind: 'retry', error: notTheApp(response, inputs) }
  const retryable = response.status >= 500 || response.status === 408 || response.status === 429
  return { kind: retryable ? 'retry' : 'final', error: PushError.of(httpErrorOf(response, { error: refusal }), inputs) }
}

/** The answer's events when it is a push answer naming every pushed id; otherwise undefined (not the app's). */
function acknowledgement(json: unknown, inputs: readonly PushedEvent[]): A2Event[] | undefined {
  let events: A2Event[]
  try {
    events = decodePushAnswer(json).events
  } catch (error) {
    console.error('[a2] push: the answer is not one:', error instanceof WireError ? error.message : error)
    return undefined
  }
  const answered = new Set(events.map((event) => event.id))
  const named = inputs.every((input) => input.id === undefined || answered.has(input.id))
  return named && events.length === inputs.length ? events : undefined
}

function notTheApp(response: Response, inputs: PushedEvent[]): PushError {
  const where = response.redirected ? ` after a redirect to ${response.url}` : ''
  return new PushError('not_the_app', `the answer came from something that is not the app (${response.status}${where})`, inputs, {
    status: response.status,
  })
}
