/**
 * Identity: an anonymous user per browser, in a signed HttpOnly cookie. The secret comes
 * from AUTH_SECRET, or is generated once into A2_DATA_DIR (so development needs no setup
 * and restarts keep everyone signed in).
 */
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { A2Error } from '@/lib/a2'
import { env } from '@/lib/env'

export const COOKIE = 'a2_uid'
/** One year: an anonymous identity is the only key to its sessions; losing it loses them. */
const MAX_AGE_S = 365 * 24 * 3600

let secret: Buffer | undefined

function getSecret(): Buffer {
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

/** The user id in a cookie value, or undefined when it is missing or its signature does not match. */
export function decodeIdentity(value: string | undefined): string | undefined {
  if (!value) return undefined
  const dot = value.lastIndexOf('.')
  if (dot <= 0) return undefined
  const userId = value.slice(0, dot)
  const given = Buffer.from(value.slice(dot + 1))
  const expected = Buffer.from(sign(userId))
  return given.length === expected.length && timingSafeEqual(given, expected) ? userId : undefined
}

function readCookie(request: Request, name: string): string | undefined {
  const header = request.headers.get('cookie')
  if (!header) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq !== -1 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim())
  }
  return undefined
}

export interface Identity {
  userId: string
  /** A Set-Cookie header to send when the identity was just created. */
  setCookie?: string
}

/** The request's user; with `create`, a new anonymous user when it has none. */
export function identify(request: Request, options: { create?: boolean } = {}): Identity {
  const userId = decodeIdentity(readCookie(request, COOKIE))
  if (userId) return { userId }
  if (!options.create) throw new A2Error('unauthorized', 'no identity: load the app first')
  const created = `u_${randomUUID()}`
  const secure = new URL(request.url).protocol === 'https:' ? '; Secure' : ''
  return {
    userId: created,
    setCookie: `${COOKIE}=${encodeIdentity(created)}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${MAX_AGE_S}${secure}`,
  }
}
