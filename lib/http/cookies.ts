/** Reading one cookie from a request, defensively: cookies are attacker-controlled text. */

/**
 * The value of cookie `name`, or undefined when it is absent, its %-encoding is malformed
 * (decodeURIComponent threw: that was a 500 on every route), or it appears more than once
 * (a tossed duplicate from a sibling origin or a narrower Path: which one is ours is unknowable).
 */
export function readCookie(request: Request, name: string): string | undefined {
  const header = request.headers.get('cookie')
  if (!header) return undefined
  let found: string | undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq === -1 || part.slice(0, eq).trim() !== name) continue
    if (found !== undefined) return undefined
    try {
      found = decodeURIComponent(part.slice(eq + 1).trim())
    } catch {
      return undefined
    }
  }
  return found
}
