/**
 * The operator role, checked on the server: a bearer token (or the same token in the
 * `a2_operator` cookie, for the browser) equal to A2_OPERATOR_TOKEN, or a user whose id is
 * in A2_OPERATOR_USER_IDS, or an account whose verified email is in A2_OPERATOR_EMAILS. Everyone else is an end user: their own run history
 * at most, never another user's runs, never settling an effect.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { A2Error } from '@/lib/a2'
import { env } from '@/lib/env'
import type { Identity } from '@/lib/auth'
import { readCookie } from './cookies'

export const OPERATOR_COOKIE = 'a2_operator'

/** Who the operator is, for the audit (`token:<8 hex>` or `user:<id>`), or undefined for an end user. */
export function operatorOf(request: Request, who: Partial<Identity> | undefined): string | undefined {
  const { A2_OPERATOR_TOKEN: token, A2_OPERATOR_USER_IDS: allowed, A2_OPERATOR_EMAILS: emails } = env()
  const userId = who?.userId
  if (token) {
    const bearer = /^Bearer (.+)$/i.exec(request.headers.get('authorization') ?? '')?.[1]?.trim()
    const presented = bearer ?? readCookie(request, OPERATOR_COOKIE)
    if (presented && sameSecret(presented, token)) return `token:${digest(token).toString('hex').slice(0, 8)}`
  }
  if (userId && allowed.has(userId)) return `user:${userId}`
  // Unverified, an email is only a claim: anyone could sign up with the operator's address.
  const account = who?.account
  if (userId && account?.emailVerified && emails.has(account.email.toLowerCase())) return `user:${userId}`
  return undefined
}

export function requireOperator(request: Request, who: Partial<Identity> | undefined): string {
  const operator = operatorOf(request, who)
  if (!operator) throw new A2Error('forbidden', 'only an operator can do this')
  return operator
}

/** Compared as digests: equal length, constant time, whatever was presented. */
function sameSecret(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected))
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest()
}
