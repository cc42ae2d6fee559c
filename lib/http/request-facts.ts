/**
 * What a request says about where it came from: the client's address and the scheme.
 * Forwarded headers count only with A2_TRUST_PROXY=1 (a proxy in front that sets them);
 * otherwise a client could name any address and get a fresh set of per-address limits.
 */
import { isIP } from 'node:net'
import { env } from '@/lib/env'

/**
 * Set on every incoming request from the socket's own address by `stampPeerAddress`
 * (installed at boot), overwriting whatever a client sent under this name. Next fills
 * X-Forwarded-For from the socket only when the client sent none, so that header alone
 * cannot be trusted without a proxy.
 */
export const PEER_HEADER = 'x-a2-peer'

/** The client's address, as the key of per-address limits: IPv6 by its /64 (one host's usual allocation). */
export function clientAddress(request: Request): string {
  return addressKey(clientIp(request))
}

/** The client's address as sent ('' when unknown): the socket's, or with A2_TRUST_PROXY our proxy's last X-Forwarded-For entry. */
export function clientIp(request: Request): string {
  const forwarded = env().A2_TRUST_PROXY ? request.headers.get('x-forwarded-for') : null
  // The last entry is the one our proxy appended; earlier ones are whatever the client claimed.
  return (forwarded ? forwarded.split(',').at(-1) : request.headers.get(PEER_HEADER))?.trim() ?? ''
}

export function addressKey(raw: string): string {
  const address = raw.replace(/^::ffff:/i, '')
  if (isIP(address) === 4) return address
  if (isIP(address) === 6) return `${expandV6(address).slice(0, 4).join(':')}::/64`
  return 'unknown'
}

function expandV6(address: string): string[] {
  const [head, tail = ''] = address.split('::')
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const fill = address.includes('::') ? Array(8 - left.length - right.length).fill('0') : []
  return [...left, ...fill, ...right].map((group) => group.toLowerCase().replace(/^0+(?=.)/, ''))
}

/** Whether the browser reached us over https (directly, or at a trusted proxy in front). */
export function isHttps(request: Request): boolean {
  if (env().A2_TRUST_PROXY) {
    const proto = request.headers.get('x-forwarded-proto')?.split(',')[0]?.trim()
    if (proto) return proto === 'https'
  }
  return new URL(request.url).protocol === 'https:'
}

/** The host the browser addressed: what a same-origin request's Origin must name. */
export function requestHost(request: Request): string {
  const forwarded = env().A2_TRUST_PROXY ? request.headers.get('x-forwarded-host')?.split(',')[0]?.trim() : undefined
  return (forwarded || request.headers.get('host') || new URL(request.url).host).toLowerCase()
}
