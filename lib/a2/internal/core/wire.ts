/**
 * The wire, coded once: every shape a2 sends between processes (NOTIFY hints, step batches)
 * and to browsers (SSE frames, push bodies and answers, error bodies), with named fields in
 * code. The compact keys that save bytes on the wire are spelled here and nowhere else (and
 * in the SQL of migration 0002, which builds the same hints); lib/a2/PROTOCOL.md is their spec.
 *
 * Isomorphic: the browser's session store decodes its SSE frames and push answers here, so
 * nothing in this module may import a server-only module.
 *
 * Whatever arrives from outside this process (a NOTIFY payload anyone with the database can
 * send, an SSE frame or an answer in the browser) is decoded with its shape checked, and a
 * mismatch throws a WireError naming the field — never a half-read value.
 */
import type { A2Event } from './contract'

/** A payload that is not the shape it claims: `what` names the wire shape, the message the field. */
export class WireError extends Error {
  constructor(
    readonly what: string,
    message: string,
  ) {
    super(`a2 wire: ${what}: ${message}`)
    this.name = 'WireError'
  }
}

// ---------------------------------------------------------------------------------------
// NOTIFY channels and hints

/**
 * Hints for workers (and tails): appends that start or cancel runs, and wake-ups. A worker
 * process LISTENs here only.
 */
export const JOBS_CHANNEL = 'a2'
/**
 * Hints for tails only: appends that start and cancel nothing (a consumer's chunks, ~8 per
 * append at 100 streams). Apart, so a worker process never receives, let alone parses, one.
 * A tailing process LISTENs on both channels on one connection, so it gets every append's
 * hint in commit order.
 */
export const TAIL_CHANNEL = 'a2_tail'

/** A run moved to CANCELLING by an append: a worker running it fires its signal. */
export interface CancelNotice {
  jobId: number
  cancelVersion: number
  /** The event that cancelled it. */
  eventId: string
  eventIndex: number
}

/** What one append transaction announces. A hint, never the truth: every subscriber also polls. */
export interface Hint {
  /** The session appended to; '' for a wake-up that names none. */
  sessionId: string
  /** The session's head after the append (its next index); 0 for a wake-up. */
  head: number
  /** New jobs were created (or became claimable): workers claim. */
  newJobs?: boolean
  /** Runs moved to CANCELLING. */
  cancels?: CancelNotice[]
  /** More cancels than fit in `cancels`: workers recheck every running attempt's row. */
  recheckCancels?: boolean
  /** The appended events, when they fit in NOTIFY's 8000 bytes. */
  events?: A2Event[]
}

/** 32 cancels × ~60 bytes stays far below NOTIFY's 8000-byte payload limit. */
export const MAX_CANCELS_PER_HINT = 32

/** A hint's JSON without its events (`a2_notify` adds them in SQL when the whole payload fits). */
export function encodeHint(hint: Omit<Hint, 'events'>): string {
  const wire: Record<string, unknown> = { s: hint.sessionId, h: hint.head }
  if (hint.newJobs) wire.j = 1
  if (hint.cancels && hint.cancels.length > 0) wire.c = hint.cancels.map((c) => [c.jobId, c.cancelVersion, c.eventId, c.eventIndex])
  if (hint.recheckCancels) wire.C = 1
  return JSON.stringify(wire)
}

/**
 * Decodes a NOTIFY payload of one hint (what the SQL functions send). The carried events are
 * decoded only when `wantEvents` says this process tails the session (a process that does not
 * never walks them).
 */
export function decodeHint(text: string, wantEvents: (sessionId: string) => boolean = () => true): Hint {
  return hintOf(parseObject(text, HINT), wantEvents)
}

const HINT = 'NOTIFY hint'
/**
 * Hints packed into one NOTIFY payload (`a2_announce_steps`, migration 0009: a step statement's
 * batches, announced after its commit): `{"o": origin, "m": [hint, …]}`, each hint carrying its
 * events when it fits in a payload alone. `origin` names the store that committed them, which
 * delivered them to its own tails already and drops them when they come back.
 */
/** The origin a packed payload starts with: a listener drops its own store's hints before parsing them. */
export function packedPrefix(origin: string): string {
  return `{"o":${JSON.stringify(origin)},`
}

/** Every hint a NOTIFY payload holds: one (from SQL) or a packed list (packHints). */
export function decodeHints(text: string, wantEvents: (sessionId: string) => boolean = () => true): Hint[] {
  const wire = parseObject(text, HINT)
  if (wire.m === undefined) return [hintOf(wire, wantEvents)]
  str(wire.o, HINT, 'o (origin)')
  return list(wire.m, HINT, 'm (hints)').map((item, k) => hintOf(object(item, HINT, `m[${k}]`), wantEvents))
}

function hintOf(wire: Record<string, unknown>, wantEvents: (sessionId: string) => boolean): Hint {
  const what = HINT
  const hint: Hint = {
    sessionId: str(wire.s, what, 's (session id)'),
    head: int(wire.h, what, 'h (head)'),
  }
  if (wire.j !== undefined) hint.newJobs = flag(wire.j, what, 'j (new jobs)')
  if (wire.C !== undefined) hint.recheckCancels = flag(wire.C, what, 'C (recheck cancels)')
  if (wire.c !== undefined) {
    hint.cancels = list(wire.c, what, 'c (cancels)').map((tuple, k) => {
      const field = `c[${k}]`
      const t = list(tuple, what, field)
      if (t.length !== 4) throw new WireError(what, `${field} is not [job id, cancel version, event id, event index]`)
      return {
        jobId: int(t[0], what, `${field}[0] (job id)`),
        cancelVersion: int(t[1], what, `${field}[1] (cancel version)`),
        eventId: str(t[2], what, `${field}[2] (event id)`),
        eventIndex: int(t[3], what, `${field}[3] (event index)`),
      }
    })
  }
  if (wire.e !== undefined && wantEvents(hint.sessionId)) {
    hint.events = list(wire.e, what, 'e (events)').map((item, k) => {
      const field = `e[${k}]`
      const e = object(item, what, field)
      if (!('p' in e)) throw new WireError(what, `${field}.p (payload) is missing`)
      return {
        id: str(e.d, what, `${field}.d (id)`),
        sessionId: hint.sessionId,
        index: int(e.i, what, `${field}.i (index)`),
        type: str(e.t, what, `${field}.t (type)`),
        payload: e.p,
        createdAt: isoTime(str(e.c, what, `${field}.c (created at)`), what, `${field}.c (created at)`),
      }
    })
  }
  return hint
}

// ---------------------------------------------------------------------------------------
// Step batches (the argument of a2_append_steps_many, migration 0002)

/** One consumer's batch of step events for one session, fenced by its attempt. */
export interface StepBatch {
  sessionId: string
  /** The fence: the job and attempt that must still hold it; null for an unfenced append. */
  jobId: number | null
  attempt: number | null
  /** The runs these events are steps of (refused once any is cancelled). */
  runs: string[]
  events: Array<{ id: string; type: string; payload: unknown }>
  /** The session's cap on events (steps count against it); undefined: none. */
  maxEvents?: number
}

/** One batch's JSON; the statement takes `[batch, batch, …]` as one jsonb. */
export function encodeStepBatch(batch: StepBatch): string {
  const cap = batch.maxEvents !== undefined ? { m: batch.maxEvents } : {}
  return JSON.stringify({ s: batch.sessionId, j: batch.jobId, a: batch.attempt, r: batch.runs, e: batch.events, ...cap })
}

// ---------------------------------------------------------------------------------------
// Server-sent events (GET /api/sessions/:id/events)

/** How long a browser waits before reconnecting on its own (it sends Last-Event-ID). */
export const SSE_RETRY_MS = 1_000
/** The first frame of every stream. */
export const SSE_OPEN = `retry: ${SSE_RETRY_MS}\n\n`
/** A comment: keeps proxies from idling the stream out; clients ignore it. */
export const SSE_KEEP_ALIVE = ': keep-alive\n\n'

/** One event's frame: `id:` is its index (a reconnect's Last-Event-ID), `data:` the event as JSON on one line. */
export function encodeSseEvent(event: A2Event): string {
  return `id: ${event.index}\ndata: ${encodeEvent(event)}\n\n`
}

/** An event as JSON, its fields in this order (what SSE frames and push answers carry). */
export function encodeEvent(event: A2Event): string {
  return JSON.stringify({
    id: event.id,
    sessionId: event.sessionId,
    index: event.index,
    type: event.type,
    payload: event.payload,
    createdAt: event.createdAt,
  })
}

/** Decodes an SSE frame's `data` (untrusted: the browser checks its shape). */
export function decodeSseEvent(data: string): A2Event {
  return decodeEvent(parseObject(data, 'SSE event'), 'SSE event')
}

/** Checks an event's shape: id, sessionId, index ≥ 0, type, payload (any JSON), createdAt. */
export function decodeEvent(value: unknown, what = 'event'): A2Event {
  const e = object(value, what, 'the event')
  if (!('payload' in e)) throw new WireError(what, 'payload is missing')
  return {
    id: str(e.id, what, 'id'),
    sessionId: str(e.sessionId, what, 'sessionId'),
    index: int(e.index, what, 'index'),
    type: str(e.type, what, 'type'),
    payload: e.payload,
    createdAt: str(e.createdAt, what, 'createdAt'),
  }
}

// ---------------------------------------------------------------------------------------
// Pushes (POST /api/sessions/:id/events)

/** One event a browser pushes: `id` (client-chosen) makes a retry of the push a no-op. */
export interface PushedEvent {
  id?: string
  type: string
  payload: unknown
}

/** One event is sent bare; several as `{ events: [...] }` (all or nothing). */
export function encodePushBody(events: readonly PushedEvent[]): string {
  return JSON.stringify(events.length === 1 ? events[0] : { events })
}

/** The events a push body holds, unchecked (validateInput checks each); undefined when the body is neither shape. */
export function pushedEvents(body: unknown): unknown[] | undefined {
  const batch = typeof body === 'object' && body !== null && !Array.isArray(body) && 'events' in body && Object.keys(body).length === 1
  if (!batch) return [body]
  const list = (body as { events: unknown }).events
  return Array.isArray(list) ? list : undefined
}

/** A push's answer: the events as stored (the originals when `duplicate`). */
export interface PushAnswer {
  events: A2Event[]
  duplicate: boolean
}

/** Decodes a 200/201 push answer (untrusted in the browser). */
export function decodePushAnswer(value: unknown): PushAnswer {
  const what = 'push answer'
  const answer = object(value, what, 'the answer')
  return {
    events: list(answer.events, what, 'events').map((e, k) => decodeEvent(e, `${what} events[${k}]`)),
    duplicate: answer.duplicate === undefined ? false : bool(answer.duplicate, what, 'duplicate'),
  }
}

// ---------------------------------------------------------------------------------------
// Errors (every 4xx and 5xx)

// The body's shape lives beside the error class that serialises itself to it (errors.ts), so
// errors.ts needs nothing from here and the modules import one way: wire → errors.
export { errorBody, type ErrorBody } from './errors'
import type { ErrorBody } from './errors'

/** The error a refusal carries, or undefined when the body is not an ErrorBody (a proxy's HTML page). */
export function decodeErrorBody(value: unknown): ErrorBody['error'] | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const error = (value as { error?: unknown }).error
  if (typeof error !== 'object' || error === null) return undefined
  const { code, message, details } = error as Record<string, unknown>
  if (typeof code !== 'string' || typeof message !== 'string') return undefined
  return { code, message, ...(details !== undefined ? { details } : {}) }
}

// ---------------------------------------------------------------------------------------
// Field checks

function parseObject(text: string, what: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new WireError(what, 'not JSON')
  }
  return object(value, what, 'the payload')
}

function object(value: unknown, what: string, field: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new WireError(what, `${field} is not an object`)
  return value as Record<string, unknown>
}

function list(value: unknown, what: string, field: string): unknown[] {
  if (!Array.isArray(value)) throw new WireError(what, `${field} is not an array`)
  return value
}

function str(value: unknown, what: string, field: string): string {
  if (typeof value !== 'string') throw new WireError(what, `${field} is not a string`)
  return value
}

function int(value: unknown, what: string, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new WireError(what, `${field} is not an integer ≥ 0`)
  return value
}

function bool(value: unknown, what: string, field: string): boolean {
  if (typeof value !== 'boolean') throw new WireError(what, `${field} is not a boolean`)
  return value
}

/** The compact flags are 1 when set. */
function flag(value: unknown, what: string, field: string): true {
  if (value !== 1) throw new WireError(what, `${field} is not 1`)
  return true
}

/** A timestamp as the log states it: ISO 8601, UTC, milliseconds (Postgres sends microseconds and an offset). */
function isoTime(text: string, what: string, field: string): string {
  const time = new Date(text)
  if (Number.isNaN(time.getTime())) throw new WireError(what, `${field} is not a timestamp`)
  return time.toISOString()
}
