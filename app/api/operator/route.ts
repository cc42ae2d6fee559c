import { z } from 'zod'
import { A2Error } from '@/lib/a2'
import { env } from '@/lib/env'
import { OPERATOR_COOKIE, operatorOf } from '@/lib/http/operator'
import { isHttps } from '@/lib/http/request-facts'
import { parse, readBody, route } from '@/lib/http/route'

export const dynamic = 'force-dynamic'

/** Am I an operator? (The runs page asks, to show the sign-in or the cross-user view.) */
export async function GET(request: Request) {
  return route(request, async (identity) => Response.json({ operator: Boolean(operatorOf(request, identity)) }), { identity: 'optional' })
}

const signIn = z.object({ token: z.string().min(1).max(500) }).strict()

/**
 * Operator sign-in for the browser: the A2_OPERATOR_TOKEN, kept in an HttpOnly, SameSite=Strict
 * cookie (Secure over https). A wrong token is a 403 and sets nothing.
 */
export async function POST(request: Request) {
  return route(
    request,
    async (identity) => {
      const { token } = parse(signIn, await readBody(request, 1024), 'body')
      const probe = new Request(request.url, { headers: { authorization: `Bearer ${token}` } })
      if (!env().A2_OPERATOR_TOKEN || !operatorOf(probe, undefined)) throw new A2Error('forbidden', 'that is not the operator token')
      const response = Response.json({ operator: Boolean(operatorOf(probe, identity)) })
      response.headers.append('set-cookie', operatorCookie(request, encodeURIComponent(token), 8 * 3600))
      return response
    },
    { identity: 'optional' },
  )
}

/** Sign out: the cookie is cleared. */
export async function DELETE(request: Request) {
  return route(
    request,
    async () => {
      const response = Response.json({ operator: false })
      response.headers.append('set-cookie', operatorCookie(request, '', 0))
      return response
    },
    { identity: 'optional' },
  )
}

/** Eight hours: a working day, then sign in again. */
function operatorCookie(request: Request, value: string, maxAgeS: number): string {
  return `${OPERATOR_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}${isHttps(request) ? '; Secure' : ''}`
}
