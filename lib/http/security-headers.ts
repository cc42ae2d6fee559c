/**
 * The security headers, in one place: the page CSP (with the request's nonce) set by
 * proxy.ts, and the headers every response carries, set by next.config.ts. No imports:
 * next.config.ts and the proxy bundle both load this file.
 */

/**
 * Scripts only from us, each with this response's nonce (Next puts it on its own scripts;
 * the layout on the theme script), and whatever those load ('strict-dynamic'). Images only
 * from us or data: — a Markdown image pointing elsewhere is shown as a link, never fetched
 * (with prompt injection, an image URL is an exfiltration channel). Styles may be inline:
 * React's `style` attributes need it, and CSS cannot run script. No framing, no plugins,
 * forms and <base> only to us. Development adds 'unsafe-eval' (React's dev stack traces).
 */
export function pageCsp(nonce: string, options: { development: boolean; https: boolean }): string {
  return [
    `default-src 'self'`,
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${options.development ? ` 'unsafe-eval'` : ''}`,
    `style-src 'self' 'unsafe-inline'`,
    `img-src 'self' data: blob:`,
    `font-src 'self'`,
    `connect-src 'self'`,
    `object-src 'none'`,
    `base-uri 'self'`,
    `form-action 'self'`,
    `frame-ancestors 'none'`,
    // Over plain http (development, the loopback test suites) an upgrade would break every request.
    ...(options.https ? ['upgrade-insecure-requests'] : []),
  ].join('; ')
}

/** API responses are JSON or SSE: nothing in them may run, load or be framed. */
export const API_CSP = `default-src 'none'; frame-ancestors 'none'`

/** On every response: pages, API, static files. */
export function commonHeaders(options: { production: boolean }): Array<{ key: string; value: string }> {
  return [
    { key: 'X-Content-Type-Options', value: 'nosniff' },
    { key: 'Referrer-Policy', value: 'strict-origin-when-cross-origin' },
    // frame-ancestors 'none' in the CSP, and this for browsers that predate it.
    { key: 'X-Frame-Options', value: 'DENY' },
    { key: 'Permissions-Policy', value: 'camera=(), microphone=(), geolocation=(), payment=()' },
    { key: 'Cross-Origin-Opener-Policy', value: 'same-origin' },
    // Two years, the preload list's minimum; browsers ignore it over plain http.
    ...(options.production ? [{ key: 'Strict-Transport-Security', value: 'max-age=63072000; includeSubDomains' }] : []),
  ]
}
