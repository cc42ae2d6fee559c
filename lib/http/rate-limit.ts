/**
 * Per-user token buckets, in this process's memory: a burst of `capacity`, refilled at
 * `perMinute`. One app instance enforces its own share; the limit protects the model
 * budget and the log from a runaway tab or script, not from a distributed attack.
 */
import { A2Error } from '@/lib/a2'

interface Bucket {
  tokens: number
  at: number
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>()

  constructor(
    private readonly perMinute: number,
    private readonly capacity = perMinute,
  ) {}

  /** Takes `cost` tokens for `key`, or throws rate_limited with the seconds until enough are back. */
  take(key: string, cost = 1, now = Date.now()): void {
    const ratePerMs = this.perMinute / 60_000
    const bucket = this.buckets.get(key) ?? { tokens: this.capacity, at: now }
    bucket.tokens = Math.min(this.capacity, bucket.tokens + (now - bucket.at) * ratePerMs)
    bucket.at = now
    if (bucket.tokens < cost) {
      this.buckets.set(key, bucket)
      const retryAfterS = Math.max(1, Math.ceil((cost - bucket.tokens) / ratePerMs / 1000))
      throw new A2Error('rate_limited', `too many requests: try again in ${retryAfterS} s`, { details: { retryAfterS } })
    }
    bucket.tokens -= cost
    this.buckets.set(key, bucket)
    // Forget full buckets now and then, so memory tracks active users only.
    if (this.buckets.size > 10_000) {
      for (const [k, b] of this.buckets) if (b.tokens + (now - b.at) * ratePerMs >= this.capacity) this.buckets.delete(k)
    }
  }
}
