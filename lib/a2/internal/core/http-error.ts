/**
 * What a browser-side call to the app's routes failed with: the server's typed refusal
 * (`{ error: { code, message } }` and its HTTP status), or no answer at all (`status`
 * undefined, code `network`). One real Error class for every client-side failure, so a
 * catch can test `instanceof A2HttpError` and read `status` without guessing a shape.
 * (A2Error is the server's side of the same answer: it is what the route turned into it.)
 */
import { brandOf, BrandedError } from './brand'

export interface A2HttpErrorOptions {
  /** The HTTP status; undefined when the server was not reached. */
  status?: number
  /** A 429's Retry-After, in seconds. */
  retryAfterS?: number
  cause?: unknown
}

export class A2HttpError extends BrandedError {
  /** Each class's mark; subclasses declare their own. See brand.ts for why not plain instanceof. */
  static readonly brand: symbol = brandOf('A2HttpError')

  readonly code: string
  readonly status?: number
  readonly retryAfterS?: number

  constructor(code: string, message: string, options: A2HttpErrorOptions = {}) {
    super(message, { cause: options.cause })
    this.name = 'A2HttpError'
    this.code = code
    if (options.status !== undefined) this.status = options.status
    if (options.retryAfterS !== undefined) this.retryAfterS = options.retryAfterS
  }

  /** A refusal: 4xx. Retrying the same request cannot help (408 and 429 excepted by the callers that retry). */
  get refused(): boolean {
    return this.status !== undefined && this.status >= 400 && this.status < 500
  }
}

/** The server's words for a non-2xx answer, parsed from its JSON body (already read) and headers. */
export function httpErrorOf(
  response: Response,
  body: { error?: { code?: string; message?: string } } | undefined,
  fallbackMessage = `the server answered ${response.status}`,
): A2HttpError {
  const retryAfter = Number(response.headers.get('retry-after'))
  return new A2HttpError(body?.error?.code ?? `http_${response.status}`, body?.error?.message ?? fallbackMessage, {
    status: response.status,
    retryAfterS: response.status === 429 && Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
  })
}
