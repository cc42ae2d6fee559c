/** The process's rate limiters, sized from the environment; on globalThis like every per-process singleton. */
import { env } from '@/lib/env'
import { RateLimiter } from './rate-limit'

const globalLimits = globalThis as unknown as { __a2Limits?: { pushes: RateLimiter; generations: RateLimiter } }

export function limits() {
  globalLimits.__a2Limits ??= {
    pushes: new RateLimiter(env().A2_RATE_PUSHES_PER_MIN),
    generations: new RateLimiter(env().A2_RATE_GENERATIONS_PER_MIN),
  }
  return globalLimits.__a2Limits
}
