/**
 * How a committed chunk batch is announced (issue 37). Its statement (a2_append_steps_many,
 * migration 0009) notifies no one: Postgres takes one cluster-wide lock at the commit of every
 * transaction with a pending NOTIFY and holds it through that commit's WAL flush, so chunk
 * commits that notified queued with one another and with every Stop's `a2_push`. After the
 * commit, the process that made it
 *
 * - hands the hints to its own tails at once (bus.ts deliverHere): no round trip, and
 * - sends them to other processes in one notifying transaction per group commit, packed many
 *   sessions to a payload (wire.ts packHints). That transaction writes
 *   no row and holds no data lock, runs on a connection of its own (Store.announce: never
 *   queued behind the pool's statements; pipelined there, in order, one per group commit;
 *   through the pool, PGlite's or a wrapped store's, one in flight and hints that commit
 *   meanwhile go together in the next), and commits without waiting for its WAL flush
 *   (`synchronous_commit` off for it alone: a hint lost in a crash costs a poll, the data it
 *   announces is already durable), so the notify lock is held for the queue insert only.
 *
 * A caller's append resolves at its commit, not at its hint: a consumer's next batch of the
 * session waits for the one before (one in flight per stream), and a notification round trip
 * in that cycle would lengthen every token's wait. Its next batch's hint cannot overtake this
 * one's (the notifying statements run in the order they were sent); an append that notifies in its own
 * commit (a fenced admitted append: an event that starts runs) waits for the session's hints
 * still on their way (sessionHintsSent), so a consumer is heard in the order it wrote.
 */
import { sql } from 'drizzle-orm'
import { packHints, TAIL_CHANNEL, type Hint } from '../core/wire'
import { query, type Store } from '../store/store'
import { deliverHere, originOf } from './bus'

interface Waiting {
  hints: readonly Hint[]
  sent: () => void
}

/** A lost hint only slows: the bus's poll finds the heads. */
const ignore = () => {}

/** One per store: through the pool, one notifying transaction in flight, so hints keep their order. */
class Notifier {
  private waiting: Waiting[] = []
  private sending = false
  /** Per session, when its latest hint will have been sent (absent: none on its way). */
  readonly pending = new Map<string, Promise<void>>()

  constructor(private readonly store: Store) {}

  /** Resolves once the hints were sent (or failed to be: a lost hint only slows, the bus's poll finds the heads). */
  send(hints: readonly Hint[]): Promise<void> {
    if (hints.length === 0) return Promise.resolve()
    // On a connection of its own the statements run in the order they were sent, pipelined: each
    // group commit's goes at once. Waiting for the one before cost a round trip and a turn of a
    // busy worker's event loop (figure 2 @100, 5 runs: append → client p50 151 ms, main's 43).
    const sent = this.store.announce
      ? notify(this.store, packHints(originOf(this.store), hints)).then(ignore, ignore)
      : new Promise<void>((resolve) => {
          this.waiting.push({ hints, sent: resolve })
          if (!this.sending) void this.drain()
        })
    for (const { sessionId } of hints) this.pending.set(sessionId, sent)
    void sent.then(() => {
      for (const { sessionId } of hints) if (this.pending.get(sessionId) === sent) this.pending.delete(sessionId)
    })
    return sent
  }

  private async drain(): Promise<void> {
    this.sending = true
    while (this.waiting.length > 0) {
      const taken = this.waiting
      this.waiting = []
      try {
        await notify(
          this.store,
          packHints(
            originOf(this.store),
            taken.flatMap((w) => w.hints),
          ),
        )
      } catch {
        // The store is unreachable or the queue full: tails find the heads by polling.
      }
      for (const w of taken) w.sent()
    }
    this.sending = false
  }
}

function notify(store: Store, payloads: readonly string[]): Promise<unknown> {
  // The payloads are JSON: sent as one json array (each element's text kept as written), not
  // as strings inside one, whose every quote would be escaped on the way.
  const statement = sql`select pg_notify(${TAIL_CHANNEL}, t.p::text), set_config('synchronous_commit', 'off', true)
        from json_array_elements(${`[${payloads.join(',')}]`}::json) as t(p)`
  return store.announce ? store.announce(statement) : query(store.db, statement)
}

const notifiers = new WeakMap<Store, Notifier>()

/** Announces one group commit's landed batches: in-process now, to other processes after. */
export function announceSteps(store: Store, hints: readonly Hint[]): Promise<void> {
  deliverHere(store, hints)
  let notifier = notifiers.get(store)
  if (!notifier) notifiers.set(store, (notifier = new Notifier(store)))
  return notifier.send(hints)
}

/** Resolves once the hints of the session's committed batches have been sent (at once when none is on its way). */
export function sessionHintsSent(store: Store, sessionId: string): Promise<void> {
  return notifiers.get(store)?.pending.get(sessionId) ?? Promise.resolve()
}
