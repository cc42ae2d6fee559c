/**
 * CSRF: a state-changing request must be JSON and come from our own origin.
 *
 * JSON alone already needs a CORS preflight from another origin (which we never grant),
 * so a `text/plain` or form post from another site (finding 2: a 201 into the victim's
 * session) is refused on its content type. The origin check is the second lock: the
 * browser's Sec-Fetch-Site must say same-origin when sent, and Origin must name our host.
 * A request with neither is refused too (scripts name the origin they call).
 */
import { A2Error } from '@/lib/a2'
import { requestHost } from './request-facts'

/**
 * `accepts` is the body's type: JSON, or `application/octet-stream` for an upload's raw bytes
 * (not CORS-safelisted either, so it needs the same preflight we never grant).
 */
export function checkStateChange(request: Request, accepts: 'application/json' | 'application/octet-stream' = 'application/json'): void {
  const type = request.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase()
  if (type !== accepts) {
    throw new A2Error('unsupported_media_type', `send the body as Content-Type: ${accepts}`)
  }
  const site = request.headers.get('sec-fetch-site')?.trim()
  if (site && site !== 'same-origin') throw new A2Error('cross_origin', `a ${site} request cannot change anything here`)
  const origin = request.headers.get('origin')?.trim()
  if (!origin) {
    if (site === 'same-origin') return
    throw new A2Error('cross_origin', 'a request that changes something must name its Origin')
  }
  let host: string
  try {
    host = new URL(origin).host.toLowerCase()
  } catch {
    throw new A2Error('cross_origin', 'the request came from another origin')
  }
  if (origin === 'null' || host !== requestHost(request)) throw new A2Error('cross_origin', 'the request came from another origin')
}
