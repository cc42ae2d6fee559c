/**
 * The one wrapper every API route uses: identity, typed JSON errors, and the identity
 * cookie on the way out when one was just created.
 */
import { A2Error } from '@/lib/a2'
import { errorResponse } from '@/lib/a2/server'
import { identify, type Identity } from '@/lib/auth'
import { z } from 'zod'

export async function route(
  request: Request,
  handler: (identity: Identity) => Promise<Response>,
  options: { createIdentity?: boolean } = {},
): Promise<Response> {
  let identity: Identity | undefined
  try {
    identity = identify(request, { create: options.createIdentity })
    const response = await handler(identity)
    if (identity.setCookie) response.headers.append('set-cookie', identity.setCookie)
    return response
  } catch (error) {
    const headers: Record<string, string> = {}
    if (identity?.setCookie) headers['set-cookie'] = identity.setCookie
    if (error instanceof A2Error && error.code === 'rate_limited') {
      headers['retry-after'] = String((error.details as { retryAfterS: number }).retryAfterS)
    }
    return errorResponse(error, headers)
  }
}

/** Parses a route input with zod; a mismatch is a 400 with the reasons. */
export function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value)
  if (!result.success) throw new A2Error('bad_request', `invalid ${what}`, { details: z.treeifyError(result.error) })
  return result.data
}

/** Session ids are UUIDs; anything else cannot exist and is refused before a query. */
export const sessionIdSchema = z.string().uuid()
