/**
 * A handler's "do not retry". Retrying is for failures that may pass (a timeout, an overloaded
 * server); a request the other side refused as wrong (a 400, a 401) fails the same way each
 * time, and two more attempts only spend time and money before the same answer. A handler that
 * knows its failure is of that kind throws this: the run fails now, its `a2.failed` in the log.
 */
import { brandOf, BrandedError } from './brand'

export class NotRetryable extends BrandedError {
  static readonly brand: symbol = brandOf('NotRetryable')
  /** Searchable beside the message in the failure (`a2.failed`'s `error.code`, the run's history). */
  readonly code?: string

  constructor(message: string, options: { cause?: unknown; code?: string } = {}) {
    super(message, { cause: options.cause })
    this.name = 'NotRetryable'
    if (options.code !== undefined) this.code = options.code
  }
}
