/**
 * A contract is the typed set of event types for one app: a zod schema per type, which
 * of them a browser may push, and which are steps of a run (refused once that run is
 * cancelled). Server and client derive every event type from this one value.
 */
import { z } from 'zod'
import { A2Error } from './errors'

// The page's CSP allows no eval, so zod's compiled ("JIT") object parsers cannot run in a
// browser; its feature probe (`Function("")`) would still report a CSP violation on every
// page. Browsers parse jitless; the server keeps the compiled parsers.
if (typeof window !== 'undefined') z.config({ jitless: true })

export type EventSchema = z.ZodType

export interface EventDefinition<S extends EventSchema = EventSchema> {
  schema: S
  /** A browser may push this type through the push route. Default: server-only. */
  push?: boolean
  /**
   * This event is a step of the run started by the event whose id this returns. Once that
   * run is CANCELLING or CANCELLED the append is refused (admission boundary).
   */
  stepOf?(payload: z.infer<S>): string | undefined
}

/** Written by the runtime when a job has spent its attempts, so the app can show the failure. */
export const FAILED_TYPE = 'a2.failed'
export const failedPayload = z.object({
  of: z.string(),
  consumer: z.string(),
  attempts: z.number().int(),
  error: z.object({ message: z.string(), code: z.string().optional() }),
})

/**
 * Written by the library when a session is renamed, in the same transaction as the row's new
 * title: every tab's view learns it from the log, and a consumer may `abortOn` it.
 */
export const RENAMED_TYPE = 'a2.renamed'
export const renamedPayload = z.object({ title: z.string() })

type BuiltIn = { [FAILED_TYPE]: EventDefinition<typeof failedPayload>; [RENAMED_TYPE]: EventDefinition<typeof renamedPayload> }

export interface Contract<D extends Record<string, EventDefinition> = Record<string, EventDefinition>> {
  readonly events: D & BuiltIn
  /** Upper bound on one event's JSON payload, in bytes. */
  readonly maxPayloadBytes: number
  readonly types: readonly string[]
}

/** 32 KiB: a long pasted message fits; a runaway client cannot bloat the log. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 32 * 1024

export function defineContract<D extends Record<string, EventDefinition>>(spec: { events: D; maxPayloadBytes?: number }): Contract<D> {
  for (const reserved of [FAILED_TYPE, RENAMED_TYPE]) if (reserved in spec.events) throw new Error(`"${reserved}" is reserved by a2`)
  const events = { ...spec.events, [FAILED_TYPE]: { schema: failedPayload }, [RENAMED_TYPE]: { schema: renamedPayload } } as D & BuiltIn
  return {
    events,
    maxPayloadBytes: spec.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
    types: Object.keys(events),
  }
}

/** An event as stored: `index` is 0,1,2… per session, gapless. */
export interface A2Event<T extends string = string, P = unknown> {
  id: string
  sessionId: string
  index: number
  type: T
  payload: P
  createdAt: string
}

export type EventTypes<C extends Contract> = Extract<keyof C['events'], string>
export type PayloadOf<C extends Contract, T extends EventTypes<C>> = z.infer<C['events'][T]['schema']>
/** The discriminated union of every stored event of a contract. */
export type EventOf<C extends Contract, T extends EventTypes<C> = EventTypes<C>> = {
  [K in T]: A2Event<K, PayloadOf<C, K>>
}[T]
/** What a caller appends: the index and timestamps are the log's to assign. */
export type EventInput<C extends Contract, T extends EventTypes<C> = EventTypes<C>> = {
  [K in T]: { id?: string; type: K; payload: PayloadOf<C, K> }
}[T]

export type Origin = 'browser' | 'server'

/** Every event's outer shape. Built once: building it per call cost ~200 µs an event (bench profile). */
const envelope = z
  .object({
    id: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[A-Za-z0-9_-]+$/, 'ids use A-Z a-z 0-9 _ -')
      .optional(),
    type: z.string().min(1).max(64),
    payload: z.unknown(),
  })
  .strict()

/** Validates one input against the contract; throws an A2Error with a typed code. */
export function validateInput(contract: Contract, input: unknown, origin: Origin): { id?: string; type: string; payload: unknown } {
  const shape = envelope.safeParse(input)
  if (!shape.success) {
    throw new A2Error('bad_request', 'an event is { id?, type, payload }', { details: z.treeifyError(shape.error) })
  }
  const { id, type } = shape.data
  const definition = (contract.events as Record<string, EventDefinition>)[type]
  if (!definition || !Object.hasOwn(contract.events, type)) {
    throw new A2Error('unknown_type', `unknown event type "${type}"`)
  }
  if (origin === 'browser' && !definition.push) {
    throw new A2Error('server_only_type', `"${type}" events are written by the server only`)
  }
  // Before anything walks the payload recursively (zod, JSON.stringify): depth and text first.
  checkJsonValue(shape.data.payload)
  const bytes = new TextEncoder().encode(JSON.stringify(shape.data.payload ?? null)).length
  if (bytes > contract.maxPayloadBytes) {
    throw new A2Error('payload_too_large', `payload is ${bytes} bytes; the limit is ${contract.maxPayloadBytes}`)
  }
  const payload = definition.schema.safeParse(shape.data.payload)
  if (!payload.success) {
    throw new A2Error('invalid_payload', `payload does not match the "${type}" schema`, {
      details: z.treeifyError(payload.error),
    })
  }
  return { id, type, payload: payload.data }
}

/**
 * 32 levels: a push (`{ events: [{ payload: { … } }] }`) needs 4; 5,000 levels overflowed the
 * stack in JSON.stringify (a 500). Checked iteratively, so the check itself cannot overflow.
 */
export const MAX_JSON_DEPTH = 32

/**
 * Refuses what Postgres cannot store or no honest client sends, in every string and key of
 * a parsed JSON value: NUL (text and jsonb cannot hold U+0000) and lone UTF-16 surrogates
 * (not valid Unicode: jsonb refuses them with a 500), and nesting deeper than MAX_JSON_DEPTH.
 */
export function checkJsonValue(value: unknown, maxDepth = MAX_JSON_DEPTH): void {
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!
    if (typeof current === 'string') checkText(current)
    else if (current !== null && typeof current === 'object') {
      if (depth >= maxDepth) throw new A2Error('too_deep', `JSON may nest at most ${maxDepth} levels`)
      if (Array.isArray(current)) for (const item of current) stack.push([item, depth + 1])
      else
        for (const [key, item] of Object.entries(current)) {
          checkText(key)
          stack.push([item, depth + 1])
        }
    }
  }
}

/** One string: no NUL, no lone surrogate. */
export function checkText(text: string): void {
  if (text.includes('\u0000')) throw new A2Error('invalid_text', 'text may not contain the NUL character (U+0000)')
  if (!(text as unknown as { isWellFormed(): boolean }).isWellFormed()) {
    throw new A2Error('invalid_text', 'text may not contain a lone UTF-16 surrogate (it is not valid Unicode)')
  }
}
