/**
 * The checks every kind of append makes the same way, whichever statement carries it (the
 * admitted append's statement or its transaction, admitted-append.ts): what a push adds to the
 * session's pushed bytes, the session's caps, and whether ids already in the log are a
 * retry of the same events or a different request.
 */
import type { A2Event } from '../core/contract'
import { A2Error } from '../core/errors'
import type { SessionCaps, ValidInput } from '../core/types'

/** What a push adds to the session's pushed bytes: its payloads as JSON. */
export function pushedBytes(inputs: readonly ValidInput[]): number {
  return inputs.reduce((sum, input) => sum + Buffer.byteLength(JSON.stringify(input.payload ?? null)), 0)
}

export function sessionFull(what: 'events' | 'bytes', caps: SessionCaps): A2Error {
  return what === 'events'
    ? new A2Error('session_full', `this chat holds its limit of ${caps.maxEvents} events: start a new chat`, {
        details: { maxEvents: caps.maxEvents },
      })
    : new A2Error('session_full', `this chat holds its limit of ${caps.maxPushedBytes} bytes of messages: start a new chat`, {
        details: { maxPushedBytes: caps.maxPushedBytes },
      })
}

/**
 * The stored events that carry the pushed ids, when they are the same events again (a retry
 * after a lost answer): the push is answered with them and writes nothing. The same id with
 * other content is a different request, and answering it as a duplicate would drop it
 * silently: a 409, as is a push of which only some ids are in the log.
 */
export function sameEventsAgain(existing: readonly A2Event[], inputs: readonly ValidInput[]): A2Event[] {
  if (existing.length !== inputs.length) throw new A2Error('conflict', 'some of these event ids are already in the log and some are not')
  const byId = new Map(existing.map((event) => [event.id, event]))
  for (const input of inputs) {
    const stored = input.id === undefined ? undefined : byId.get(input.id)
    if (!stored || stored.type !== input.type || !sameJson(stored.payload, input.payload ?? null)) {
      throw new A2Error('conflict', `event id "${input.id}" is already in the log with other content`)
    }
  }
  return [...existing].sort((a, b) => a.index - b.index)
}

/** Structural equality of two JSON values; object key order does not count (jsonb reorders keys). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((item, i) => sameJson(item, (b as unknown[])[i]))
  const keysA = Object.keys(a)
  const keysB = Object.keys(b)
  return (
    keysA.length === keysB.length &&
    keysA.every((key) => Object.hasOwn(b, key) && sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]))
  )
}
