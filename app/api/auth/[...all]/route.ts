import { A2Error } from '@/lib/a2'
import { CLIENT_IP_HEADER, getAccounts, servesAccounts } from '@/lib/auth/accounts'
import { take } from '@/lib/http/limits'
import { route } from '@/lib/http/route'
import { clientIp } from '@/lib/http/request-facts'

export const dynamic = 'force-dynamic'

/**
 * better-auth's endpoints (sign up, sign in, sign out, verify, reset, passkeys), under
 * /api/auth, behind the app's own door: a state change is JSON from this origin (the CSRF
 * rule every route keeps), errors are typed JSON, nothing is cached. No identity is minted.
 */
async function handle(request: Request): Promise<Response> {
  return route(
    request,
    async () => {
      if (!servesAccounts(request)) throw new A2Error('bad_request', 'accounts answer on the app’s own address (A2_PUBLIC_URL)')
      if (request.method === 'POST' && new URL(request.url).pathname.endsWith('/sign-in/email')) await limitSignIns(request)
      const accounts = await getAccounts()
      // The client's address as the app's own limits see it, over whatever a client sent under that name.
      const headers = new Headers(request.headers)
      headers.set(CLIENT_IP_HEADER, clientIp(request))
      return accounts.handler(new Request(request, { headers }))
    },
    { identity: 'optional' },
  )
}

/** One account's password is guessed slowly from any number of addresses: the attempt counts before it is checked. */
async function limitSignIns(request: Request): Promise<void> {
  const body = (await request
    .clone()
    .json()
    .catch(() => undefined)) as { email?: unknown } | undefined
  if (typeof body?.email === 'string') await take('signInsByAccount', body.email.trim().toLowerCase())
}

export { handle as GET, handle as POST }
