/**
 * Rate limits, kept in the database (rate-limiter-flexible's RateLimiterDrizzle: one atomic
 * upsert per take, on Postgres and PGlite alike), so every app instance on one database
 * shares each limit. Keyed by user and by client address: identities are free to mint,
 * addresses are not (finding 1: 100 generations in 13.8 s from fresh cookies).
 */
import { RateLimiterDrizzle, RateLimiterRes } from 'rate-limiter-flexible'
import { A2Error } from '@/lib/a2'
import { getStore } from '@/lib/db'
import type { Store } from '@/lib/a2/server'
import { rateLimits } from '@/lib/db/schema'
import { env } from '@/lib/env'

export type LimitName = 'identitiesByAddress' | 'pushesByAddress' | 'pushesByUser' | 'generationsByAddress' | 'generationsByUser'

type Limiters = Record<LimitName, RateLimiterDrizzle>

/** Per store (on globalThis like every per-process singleton): a reopened database gets its own limiters. */
const globalLimits = globalThis as unknown as { __a2RateLimiters?: WeakMap<Store, Limiters> }

async function limiters(): Promise<Limiters> {
  const store = await getStore()
  globalLimits.__a2RateLimiters ??= new WeakMap()
  let built = globalLimits.__a2RateLimiters.get(store)
  if (!built) {
    const e = env()
    // Each per minute: a burst of the whole minute's allowance, then nothing until the window ends.
    const perMinute = (keyPrefix: string, points: number) =>
      new RateLimiterDrizzle({ storeClient: store.db, schema: rateLimits, keyPrefix, points, duration: 60 })
    built = {
      identitiesByAddress: perMinute('identities:ip', e.A2_RATE_IDENTITIES_PER_MIN_PER_ADDRESS),
      pushesByAddress: perMinute('pushes:ip', e.A2_RATE_PUSHES_PER_MIN_PER_ADDRESS),
      pushesByUser: perMinute('pushes:user', e.A2_RATE_PUSHES_PER_MIN),
      generationsByAddress: perMinute('generations:ip', e.A2_RATE_GENERATIONS_PER_MIN_PER_ADDRESS),
      generationsByUser: perMinute('generations:user', e.A2_RATE_GENERATIONS_PER_MIN),
    }
    globalLimits.__a2RateLimiters.set(store, built)
  }
  return built
}

const WHAT: Record<LimitName, string> = {
  identitiesByAddress: 'new visitors from your address',
  pushesByAddress: 'messages from your address',
  pushesByUser: 'messages',
  generationsByAddress: 'answers requested from your address',
  generationsByUser: 'answers requested',
}

/** Takes `points` from limit `name` for `key`, or throws a 429 `rate_limited` with the seconds to wait. */
export async function take(name: LimitName, key: string, points = 1): Promise<void> {
  if (points <= 0) return
  try {
    await (await limiters())[name].consume(key, points)
  } catch (error) {
    if (!(error instanceof RateLimiterRes)) throw error
    throw rateLimited(`too many ${WHAT[name]} this minute`, error.msBeforeNext)
  }
}

/** A 429 with the seconds until a retry can succeed (the route turns it into Retry-After). */
export function rateLimited(message: string, msBeforeNext: number): A2Error {
  const retryAfterS = Math.max(1, Math.ceil(msBeforeNext / 1000))
  return new A2Error('rate_limited', `${message}: try again in ${retryAfterS} s`, { details: { retryAfterS } })
}
