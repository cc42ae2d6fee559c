/**
 * The guest: an anonymous user per browser, in a signed HttpOnly cookie, until they sign up
 * or sign in (accounts.ts; their chats then move to the account). The secret comes
 * from AUTH_SECRET (required in production), or in development is generated once into
 * A2_DATA_DIR (so development needs no setup and restarts keep everyone signed in).
 *
 * Over https the cookie is `__Host-a2_uid` with `Secure`: the prefix makes browsers refuse
 * it from a sibling origin or with a Domain or Path, so no other site on the same domain
 * can toss its own identity into ours. Over plain http (development, the loopback test
 * suites) `__Host-` cannot be used (it requires Secure), so the cookie is `a2_uid`; a
 * public deployment is https, where only the `__Host-` cookie is read.
 */
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { env } from '@/lib/env'
import { isHttps } from '@/lib/http/request-facts'
import { readCookie } from '@/lib/http/cookies'

export const COOKIE = 'a2_uid'
export const SECURE_COOKIE = '__Host-a2_uid'
/** One year: an anonymous identity is the only key to its sessions; losing it loses them. */
const MAX_AGE_S = 365 * 24 * 3600
/** What this app mints: anything else in a cookie is not ours, whatever its signature. */
const USER_ID = /^u_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

let secret: Buffer | undefined

/** The app's signing secret: the guest cookie's HMAC key, and better-auth's secret. */
export function getSecret(): Buffer {
  if (secret) return secret
  const configured = env().AUTH_SECRET
  if (configured) return (secret = Buffer.from(configured))
  const file = path.resolve(env().A2_DATA_DIR, 'auth-secret')
  try {
    secret = Buffer.from(readFileSync(file, 'utf8').trim())
  } catch {
    mkdirSync(path.dirname(file), { recursive: true })
    const generated = randomBytes(32).toString('base64url')
    try {
      writeFileSync(file, generated, { mode: 0o600, flag: 'wx' })
    } catch {
      // Another process won the race: use its secret.
    }
    secret = Buffer.from(readFileSync(file, 'utf8').trim())
  }
  return secret
}

function sign(userId: string): string {
  return createHmac('sha256', getSecret()).update(userId).digest('base64url')
}

export function encodeIdentity(userId: string): string {
  return `${userId}.${sign(userId)}`
}

/** The user id in a cookie value, or undefined when it is missing, malformed or its signature does not match. */
export function decodeIdentity(value: string | undefined): string | undefined {
  if (!value) return undefined
  const dot = value.lastIndexOf('.')
  if (dot <= 0) return undefined
  const userId = value.slice(0, dot)
  if (!USER_ID.test(userId)) return undefined
  const given = Buffer.from(value.slice(dot + 1))
  const expected = Buffer.from(sign(userId))
  return given.length === expected.length && timingSafeEqual(given, expected) ? userId : undefined
}

/** The identity cookie's name for this request: `__Host-` over https. */
export function cookieName(request: Request): string {
  return isHttps(request) ? SECURE_COOKIE : COOKIE
}

/** The request's user, or undefined: a missing, malformed, forged or ambiguous cookie is no identity. */
export function currentUser(request: Request): string | undefined {
  return decodeIdentity(readCookie(request, cookieName(request)))
}

/** A new anonymous user and the cookie that carries it. */
export function newIdentity(request: Request): { userId: string; setCookie: string } {
  const userId = `u_${randomUUID()}`
  const name = cookieName(request)
  const secure = name === SECURE_COOKIE ? '; Secure' : ''
  return {
    userId,
    setCookie: `${name}=${encodeIdentity(userId)}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${MAX_AGE_S}${secure}`,
  }
}
