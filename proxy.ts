/**
 * Runs before every page request: a fresh CSP nonce per response. Next reads the nonce
 * from the request's Content-Security-Policy header and puts it on its own scripts; the
 * root layout reads `x-nonce` for the theme script. API routes and static files get their
 * (static) headers from next.config.ts instead.
 */
import { NextResponse, type NextRequest } from 'next/server'
import { pageCsp } from './lib/http/security-headers'

export function proxy(request: NextRequest) {
  const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('base64')
  const csp = pageCsp(nonce, {
    development: process.env.NODE_ENV === 'development',
    https: request.nextUrl.protocol === 'https:',
  })
  const headers = new Headers(request.headers)
  headers.set('x-nonce', nonce)
  headers.set('content-security-policy', csp)
  const response = NextResponse.next({ request: { headers } })
  response.headers.set('content-security-policy', csp)
  return response
}

export const config = {
  matcher: [
    {
      source: '/((?!api/|_next/static|_next/image|favicon.ico).*)',
      missing: [
        { type: 'header', key: 'next-router-prefetch' },
        { type: 'header', key: 'purpose', value: 'prefetch' },
      ],
    },
  ],
}
