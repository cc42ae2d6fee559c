import { CLIENT_IP_HEADER, getAccounts } from '@/lib/auth/accounts'
import { clientIp } from '@/lib/http/request-facts'

export const dynamic = 'force-dynamic'

/** better-auth's endpoints (sign up, sign in, sign out, verify, reset, session), under /api/auth. */
async function handle(request: Request): Promise<Response> {
  const accounts = await getAccounts()
  // The client's address as the app's own limits see it, over whatever a client sent under that name.
  const headers = new Headers(request.headers)
  headers.set(CLIENT_IP_HEADER, clientIp(request))
  const response = await accounts.handler(new Request(request, { headers }))
  response.headers.set('cache-control', 'no-store')
  return response
}

export { handle as GET, handle as POST }
