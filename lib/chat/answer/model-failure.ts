/**
 * What a failed model call becomes: a refusal that another attempt would get again is not
 * retried, and every failure is one short line, for the reader and for the server's log.
 *
 * A 4xx says the request itself is wrong for that server — a tool list it does not take
 * (llama.cpp without --jinja: 400 `tools param requires --jinja flag`), a prompt past its
 * context, a bad key — and the same request gets the same answer each time: retried, it failed
 * every answer three times. 408 (timeout), 409 (conflict) and 429 (rate limit) pass with time,
 * as 5xx may; those are retried with the runtime's backoff.
 */
import { APICallError } from 'ai'
import { NotRetryable } from '@/lib/a2/server'

/** Statuses in 4xx that another attempt may get past. */
const PASSING = new Set([408, 409, 429])

/** One line, at most 200 characters: a server's message may carry newlines, a whole prompt, a stack. */
function short(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length > 200 ? `${line.slice(0, 199)}…` : line
}

/** The error to throw for a failed model call: NotRetryable for a refusal, else the error as it came (retried). */
export function modelFailure(error: unknown): unknown {
  if (!APICallError.isInstance(error)) return error
  const status = error.statusCode
  if (status === undefined || status < 400 || status >= 500 || PASSING.has(status)) return error
  return new NotRetryable(`The model server refused the request (${status}): ${short(error.message)}`, { cause: error, code: `model_http_${status}` })
}

/** The server log's line for a failed model call (the AI SDK's own prints the error object: ~60 lines with the request body). */
export function modelErrorLine(error: unknown): string {
  if (APICallError.isInstance(error)) return `model call failed${error.statusCode ? ` (${error.statusCode})` : ''}: ${short(error.message)}`
  return `model call failed: ${short(error instanceof Error ? error.message : String(error))}`
}
