/**
 * Rate limits, kept in the database (the `rate_limits` table: a row per limited key with its
 * points and the end of its window), so every app instance on one database shares each
 * limit. Keyed by user and by client address: identities are free to mint, addresses are
 * not (finding 1: 100 generations in 13.8 s from fresh cookies).
 *
 * Each window is a minute on the database's clock: a burst of the minute's allowance, then
 * nothing until the window ends. Every limit a request takes is one upsert statement, the
 * rows in the order given (an address before a user, everywhere: two statements lock shared
 * rows in one order, so they cannot deadlock). rate-limiter-flexible's RateLimiterDrizzle
 * kept the same rows with one statement per key: a push's two limits were two statements
 * and two commits.
 *
 * The statement commits asynchronously (synchronous_commit off for its own transaction): a
 * limit row is a counter of the last minute, so a database crash may forget the last
 * fraction of a second of takes (at most three WAL-writer rounds), which only gives those
 * clients a few more requests; nothing else waits for its WAL flush. On figure 9 (Stop from
 * the client's send) the push's limit rows were the statements most often seen waiting on
 * the WAL, ahead of the push itself; every push
 * from one address updates one row, which a synchronous commit held through its flush. One
 * async statement: send → upstream closed p50 103 → 71 ms (bench/README.md, "Rate-limit rows
 * written without waiting for the WAL").
 */
import { sql } from 'drizzle-orm'
import { A2Error } from '@/lib/a2'
import type { Store } from '@/lib/a2/server'
import { getStore } from '@/lib/store'
import { env, type Env } from '@/lib/env'

export type LimitName = 'identitiesByAddress' | 'pushesByAddress' | 'pushesByUser' | 'generationsByAddress' | 'generationsByUser' | 'signInsByAccount'

/** One take: `points` from limit `name` for `key`. */
export type Take = readonly [name: LimitName, key: string, points: number]

/** Each limit's key prefix (the rows RateLimiterDrizzle wrote before: `<prefix>:<key>`) and its allowance a minute. */
const LIMITS: Record<LimitName, { prefix: string; perMinute: (e: Env) => number; what: string }> = {
  identitiesByAddress: {
    prefix: 'identities:ip',
    perMinute: (e) => e.A2_RATE_IDENTITIES_PER_MIN_PER_ADDRESS,
    what: 'new visitors from your address',
  },
  pushesByAddress: { prefix: 'pushes:ip', perMinute: (e) => e.A2_RATE_PUSHES_PER_MIN_PER_ADDRESS, what: 'messages from your address' },
  pushesByUser: { prefix: 'pushes:user', perMinute: (e) => e.A2_RATE_PUSHES_PER_MIN, what: 'messages' },
  generationsByAddress: {
    prefix: 'generations:ip',
    perMinute: (e) => e.A2_RATE_GENERATIONS_PER_MIN_PER_ADDRESS,
    what: 'answers requested from your address',
  },
  generationsByUser: { prefix: 'generations:user', perMinute: (e) => e.A2_RATE_GENERATIONS_PER_MIN, what: 'answers requested' },
  // Per account, whatever the address: guessing one account's password from many addresses stays slow.
  signInsByAccount: {
    prefix: 'sign-ins:account',
    perMinute: (e) => e.A2_RATE_SIGN_INS_PER_MIN_PER_ACCOUNT,
    what: 'sign-in attempts for this account',
  },
}

const WINDOW_S = 60
/** Rows whose window ended over an hour ago are deleted, at most every 5 minutes per process (as RateLimiterDrizzle did). */
const SWEEP_EVERY_MS = 5 * 60_000
const lastSweep = new WeakMap<Store, number>()

/** Takes `points` from limit `name` for `key`, or throws a 429 `rate_limited` with the seconds to wait. */
export async function take(name: LimitName, key: string, points = 1): Promise<void> {
  await takeAll([[name, key, points]])
}

/**
 * Takes every limit in `takes` in one statement (each is counted whatever the others say), or
 * throws a 429 for the one over its allowance with the longest wait.
 */
export async function takeAll(takes: readonly Take[]): Promise<void> {
  if (takes.every(([, , points]) => points <= 0)) return
  const e = env()
  await takeLimits(await getStore(), takes, (name) => LIMITS[name].perMinute(e))
}

/** `takeAll` on a given store with given allowances (tests: two instances on one database). */
export async function takeLimits(store: Store, takes: readonly Take[], allowance: (name: LimitName) => number): Promise<void> {
  const wanted = takes.filter(([, , points]) => points > 0)
  if (wanted.length === 0) return
  // One row per key: a statement cannot upsert a row twice, so a key named twice is taken once by the sum.
  const sums = new Map<string, number>()
  for (const [name, key, points] of wanted) sums.set(rowKey(name, key), (sums.get(rowKey(name, key)) ?? 0) + points)
  const keys = [...sums].map(([key, points]) => ({ key, points }))
  const result = (await store.db.execute(sql`
    with async_commit as (select set_config('synchronous_commit', 'off', true))
    insert into rate_limits as r (key, points, expire)
    select t.key, t.points, now() + make_interval(secs => ${WINDOW_S})
    from rows from (jsonb_to_recordset(${JSON.stringify(keys)}::jsonb) as (key text, points integer)) with ordinality as t(key, points, n), async_commit
    order by t.n
    on conflict (key) do update
      set points = case when r.expire <= now() then excluded.points else r.points + excluded.points end,
          expire = case when r.expire <= now() then excluded.expire else r.expire end
    returning r.key, r.points, greatest(0, ceil(extract(epoch from r.expire - now()) * 1000))::bigint::text as ms_left`)) as unknown
  const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Array<{ key: string; points: number; ms_left: string }>
  sweep(store)
  let refused: { name: LimitName; msLeft: number } | undefined
  for (const [name, limited] of wanted) {
    const key = rowKey(name, limited)
    const row = rows.find((r) => r.key === key)
    if (!row) throw new Error(`rate limit ${key} got no row back`)
    const msLeft = Number(row.ms_left)
    if (row.points > allowance(name) && (!refused || msLeft > refused.msLeft)) refused = { name, msLeft }
  }
  if (refused) throw rateLimited(`too many ${LIMITS[refused.name].what} this minute`, refused.msLeft)
}

const rowKey = (name: LimitName, key: string) => `${LIMITS[name].prefix}:${key}`

/** Deletes rows whose window ended over an hour ago, in the background, at most every SWEEP_EVERY_MS per store. */
function sweep(store: Store): void {
  const now = Date.now()
  const last = lastSweep.get(store)
  if (last === undefined) return void lastSweep.set(store, now)
  if (now - last < SWEEP_EVERY_MS) return
  lastSweep.set(store, now)
  store.db.execute(sql`delete from rate_limits where expire < now() - interval '1 hour'`).catch(() => {})
}

/** A 429 with the seconds until a retry can succeed (the route turns it into Retry-After). */
export function rateLimited(message: string, msBeforeNext: number): A2Error {
  const retryAfterS = Math.max(1, Math.ceil(msBeforeNext / 1000))
  return new A2Error('rate_limited', `${message}: try again in ${retryAfterS} s`, { details: { retryAfterS } })
}
