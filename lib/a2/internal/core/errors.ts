/**
 * One error class for the whole library, with a typed code that maps to an HTTP status.
 * The cause is kept, never swallowed.
 */
import { brandOf, BrandedError } from './brand'

export const errorStatus = {
  bad_request: 400,
  invalid_json: 400,
  unknown_type: 400,
  invalid_payload: 400,
  /** A string Postgres cannot store or a browser should never send: NUL, a lone UTF-16 surrogate. */
  invalid_text: 400,
  /** JSON nested deeper than anything a contract needs, refused before anything walks it recursively. */
  too_deep: 400,
  cross_origin: 403,
  request_timeout: 408,
  unsupported_media_type: 415,
  /** An event names another (`for`, `of`, `edits`, `replaces`) that is not there or not of the right type. */
  invalid_reference: 422,
  /** A count cap (sessions per user) is reached: waiting does not help. */
  limit_reached: 422,
  /** The session holds as many events or pushed bytes as it may. */
  session_full: 413,
  server_only_type: 403,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  /** A session holds a run an operator has yet to settle (an UNKNOWN effect): it cannot be deleted until then. */
  unresolved: 409,
  run_cancelled: 409,
  payload_too_large: 413,
  rate_limited: 429,
  fenced: 409,
  unavailable: 503,
  internal: 500,
} as const

export type A2ErrorCode = keyof typeof errorStatus

export class A2Error extends BrandedError {
  /** Each class's mark; subclasses declare their own. See brand.ts for why not plain instanceof. */
  static readonly brand: symbol = brandOf('A2Error')

  readonly code: A2ErrorCode
  readonly details?: unknown

  constructor(code: A2ErrorCode, message: string, options: { cause?: unknown; details?: unknown } = {}) {
    super(message, { cause: options.cause })
    this.name = 'A2Error'
    this.code = code
    this.details = options.details
  }

  get status(): number {
    return errorStatus[this.code]
  }

  toJSON(): ErrorBody {
    return errorBody(this.code, this.message, this.details)
  }
}

export function isA2Error(error: unknown, code?: A2ErrorCode): error is A2Error {
  return error instanceof A2Error && (code === undefined || error.code === code)
}

/** `{ error: { code, message, details? } }`: every 4xx and 5xx body (PROTOCOL.md). `code` is an A2ErrorCode or `internal`. */
export interface ErrorBody {
  error: { code: string; message: string; details?: unknown }
}

export function errorBody(code: string, message: string, details?: unknown): ErrorBody {
  return { error: { code, message, ...(details ? { details } : {}) } }
}
