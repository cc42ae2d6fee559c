/**
 * How a committed chunk batch is announced (issue 37). Its statement (a2_append_steps_many,
 * migration 0009) notifies no one: Postgres takes one cluster-wide lock at the commit of every
 * transaction with a pending NOTIFY and holds it through that commit's WAL flush, so chunk
 * commits that notified queued with one another and with every Stop's `a2_push`. Instead
 *
 * - the process that committed it hands the hints to its own tails at once (bus.ts
 *   deliverHere): no round trip, and
 * - `a2_announce_steps` (migration 0009) notifies other processes in a transaction of its own,
 *   one per group commit, many sessions a payload: it reads the batches' events back by id,
 *   writes no row, holds no data lock and commits without waiting for its WAL flush, so it holds
 *   the notify lock for the queue insert only. On Postgres it is sent right behind the step
 *   statement on the same connection (Store.inOrder), so it runs the moment the step statement
 *   has committed: a worker whose event loop is behind (at 100 streams on 2 cores, 100+ ms) does
 *   not hold the hint. Elsewhere (PGlite, a wrapped store) it follows the step statement's
 *   answer, one in flight per store so hints keep their order.
 *
 * A caller's append resolves at its commit, not at its hint: a consumer's next batch of the
 * session waits for the one before, and a notification in that cycle would lengthen every
 * token's wait. Its next batch's hint cannot overtake this one's (announcements run in the
 * order the step statements committed a session's batches, behind each on its connection or
 * one at a time); an append that notifies in its own commit (a fenced admitted append: an event
 * that starts runs) waits for the session's hints still on their way (sessionHintsSent), so a
 * consumer is heard in the order it wrote.
 */
import { sql, type SQL } from 'drizzle-orm'
import { TAIL_CHANNEL, type Hint } from '../core/wire'
import { query, type Store } from '../store/store'
import { deliverHere, originOf } from './bus'

/** The statement that announces a step statement's batches (`batches`: the jsonb it took). */
export function announcement(store: Store, batches: string): SQL {
  return sql`select a2_announce_steps(${batches}::jsonb, ${TAIL_CHANNEL}, ${originOf(store)})`
}

/** A lost hint only slows: the bus's poll finds the heads. */
const ignore = () => {}

/** One per store: the announcements on their way, and (without Store.inOrder) the queue of those not yet sent. */
class Announcer {
  private waiting: Array<{ batches: string; sent: () => void }> = []
  private sending = false
  /** Per session, when its latest hint will have been sent (absent: none on its way). */
  readonly pending = new Map<string, Promise<void>>()

  constructor(private readonly store: Store) {}

  /** Sends the announcement of `batches` after the ones before; resolves once it ran (or failed). */
  send(batches: string): Promise<void> {
    return new Promise((sent) => {
      this.waiting.push({ batches, sent })
      if (!this.sending) void this.drain()
    })
  }

  track(hints: readonly Hint[], sent: Promise<void>): void {
    for (const { sessionId } of hints) this.pending.set(sessionId, sent)
    void sent.then(() => {
      for (const { sessionId } of hints) if (this.pending.get(sessionId) === sent) this.pending.delete(sessionId)
    })
  }

  private async drain(): Promise<void> {
    this.sending = true
    while (this.waiting.length > 0) {
      const next = this.waiting.shift()!
      await query(this.store.db, announcement(this.store, next.batches)).then(ignore, ignore)
      next.sent()
    }
    this.sending = false
  }
}

const announcers = new WeakMap<Store, Announcer>()

function announcerFor(store: Store): Announcer {
  let announcer = announcers.get(store)
  if (!announcer) announcers.set(store, (announcer = new Announcer(store)))
  return announcer
}

/**
 * A step statement committed `hints`: this process's tails have them now; other processes when
 * `sent` (its announcement, already on its way behind it) has run, or, without one, when the
 * announcement of `batches` sent now has.
 */
export function announceSteps(store: Store, hints: readonly Hint[], batches: string, sent?: Promise<unknown>): void {
  if (hints.length === 0) return
  deliverHere(store, hints)
  const announcer = announcerFor(store)
  announcer.track(hints, sent ? sent.then(ignore, ignore) : announcer.send(batches))
}

/** Resolves once the hints of the session's committed batches have been sent (at once when none is on its way). */
export function sessionHintsSent(store: Store, sessionId: string): Promise<void> {
  return announcers.get(store)?.pending.get(sessionId) ?? Promise.resolve()
}
