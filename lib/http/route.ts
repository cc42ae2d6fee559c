/**
 * The one wrapper every API route uses: CSRF checks on state changes, identity (minted at
 * most A2_RATE_IDENTITIES_PER_MIN_PER_ADDRESS times a minute per address), typed JSON errors
 * with Retry-After on a 429, `Cache-Control: no-store`, and the identity cookie on the way
 * out when one was just created. Plus the input helpers every route shares, so hostile
 * input is refused in one place.
 */
import { A2Error, checkJsonValue } from '@/lib/a2'
import { errorResponse, readJsonBody } from '@/lib/a2/server'
import { currentIdentity, newIdentity, type Identity } from '@/lib/auth'
import { env } from '@/lib/env'
import { z } from 'zod'
import { take } from './limits'
import { clientAddress } from './request-facts'
import { checkStateChange } from './same-origin'

type IdentityRule = 'required' | 'create' | 'optional'

export async function route(
  request: Request,
  handler: (identity: Identity) => Promise<Response>,
  options?: { identity?: 'required' | 'create'; body?: 'application/json' | 'application/octet-stream' },
): Promise<Response>
export async function route(
  request: Request,
  handler: (identity: Partial<Identity>) => Promise<Response>,
  options: { identity: 'optional' },
): Promise<Response>
export async function route(
  request: Request,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the overloads above type the handler
  handler: (identity: any) => Promise<Response>,
  options: { identity?: IdentityRule; body?: 'application/json' | 'application/octet-stream' } = {},
): Promise<Response> {
  let identity: Identity | undefined
  try {
    if (request.method !== 'GET' && request.method !== 'HEAD') checkStateChange(request, options.body)
    identity = await identify(request, options.identity ?? 'required')
    const response = await handler(identity)
    if (identity.setCookie) response.headers.append('set-cookie', identity.setCookie)
    return noStore(response)
  } catch (error) {
    const headers: Record<string, string> = {}
    if (identity?.setCookie) headers['set-cookie'] = identity.setCookie
    if (error instanceof A2Error && error.code === 'rate_limited') {
      headers['retry-after'] = String((error.details as { retryAfterS: number }).retryAfterS)
    }
    return noStore(errorResponse(error, headers))
  }
}

async function identify(request: Request, rule: IdentityRule): Promise<Identity> {
  const known = await currentIdentity(request)
  if (known) return known
  if (rule === 'optional') return {} as Identity
  if (rule === 'required') throw new A2Error('unauthorized', 'no identity: load the app first')
  await take('identitiesByAddress', clientAddress(request))
  return newIdentity(request)
}

/** API answers are per user and change with every push: no cache may keep one. */
function noStore(response: Response): Response {
  response.headers.set('cache-control', 'no-store')
  return response
}

/** Parses a route input with zod after the text and depth checks every input gets; a mismatch is a 400 with the reasons. */
export function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  checkJsonValue(value)
  const result = schema.safeParse(value)
  if (!result.success) throw new A2Error('bad_request', `invalid ${what}`, { details: z.treeifyError(result.error) })
  return result.data
}

/** Largest int4: indexes and run ids are Postgres integers (2**31 overflowed the tail: a crash). */
export const MAX_INT4 = 2 ** 31 - 1

/**
 * A whole number in plain decimal within [min, MAX_INT4], or undefined for an empty or
 * absent value (an empty `after=` is no cursor, not 0). `0x10`, ` 1`, `1e400`, `1.0` are 400s.
 */
export function decimal(raw: string | null | undefined, what: string, min: number): number | undefined {
  if (raw === null || raw === undefined || raw === '') return undefined
  if (!/^-?\d{1,10}$/.test(raw)) throw new A2Error('bad_request', `${what} must be a decimal integer`)
  const value = Number(raw)
  if (value < min || value > MAX_INT4) throw new A2Error('bad_request', `${what} must be between ${min} and ${MAX_INT4}`)
  return value
}

/** A JSON body of at most `maxBytes` that must arrive within A2_BODY_TIMEOUT_MS (408 otherwise). */
export function readBody(request: Request, maxBytes: number, options: { allowEmpty?: boolean } = {}): Promise<unknown> {
  return readJsonBody(request, maxBytes, { timeoutMs: env().A2_BODY_TIMEOUT_MS, allowEmpty: options.allowEmpty })
}

/** Session ids are UUIDs; anything else cannot exist and is refused before a query. */
export const sessionIdSchema = z.string().uuid()
