/**
 * How the session store delivers its durable pushes (a Stop): each is an outbox entry, sent
 * until the server acknowledges it or finally refuses it. A delivery waits its turn in the
 * store's push queue (a Stop must land after the `generate` it names) and holds it while it
 * retries, so later pushes keep their order behind it. A closed store suspends the loop; the
 * entry stays in storage and the store's connect() (or the next page) resumes it.
 */
import type { A2Event } from '../core/contract'
import { heldForReference, isAcknowledged, keptForItsIdentity, type Outbox } from './outbox'
import type { OrderedQueue } from './ordered-queue'
import type { PushError, PushOutcome } from './post-push'
import type { WakeableSleeps } from './wakeable-sleep'

export interface DurableDeliveryOptions {
  outbox: Outbox
  queue: OrderedQueue
  sleeps: WakeableSleeps
  /** Retry delays; the last one repeats for as long as the entry waits. */
  delaysMs: number[]
  /** One send of one intent (`keepalive`, so it finishes after the page is gone). */
  post(event: A2Event): Promise<PushOutcome>
  isClosed(): boolean
  /** The server answered with the intent's events. */
  acknowledged(events: A2Event[]): void
  /** The server's final refusal of the intent: the store stops showing it and says why. */
  refused(event: A2Event, error: PushError): void
  /** A send failed and will be retried (the entry's failure count moved). */
  failed(): void
}

export interface DurableDelivery {
  /** Sends `events` as intents; resolves once every one is acknowledged, rejects at the first final refusal. */
  push(events: A2Event[]): Promise<A2Event[]>
  /** Starts the delivery of an entry already in the outbox (from storage, or another tab's), unless one runs. */
  deliver(id: string): void
  /** Whether a push() waits on `id`. */
  awaits(id: string): boolean
  /** `id` reached the log another way (the tail brought it): its waiting push() resolves. */
  landed(id: string, events: A2Event[]): void
}

type Waiter = { resolve: (events: A2Event[]) => void; reject: (error: PushError) => void }

export function createDurableDelivery(options: DurableDeliveryOptions): DurableDelivery {
  const { outbox, sleeps, delaysMs } = options
  /** Outbox ids with a delivery loop running, and the push() promises waiting on them. */
  const delivering = new Set<string>()
  const waiting = new Map<string, Waiter[]>()

  const settle = (id: string, outcome: { events: A2Event[] } | { error: PushError }) => {
    for (const waiter of waiting.get(id) ?? []) {
      if ('events' in outcome) waiter.resolve(outcome.events)
      else waiter.reject(outcome.error)
    }
    waiting.delete(id)
  }

  const deliverUntilSettled = async (id: string) => {
    for (;;) {
      const entry = outbox.entries().find((e) => e.event.id === id)
      if (!entry || options.isClosed()) return
      // In the log already (this page or another heard so): kept only to cut a page rendered before it.
      if (isAcknowledged(entry)) return settle(id, { events: [entry.event] })
      const outcome = await options.post(entry.event)
      if (outcome.kind === 'ok') {
        options.acknowledged(outcome.events)
        settle(id, { events: outcome.events })
        return
      }
      // A Stop that overtook the answer it names (another tab's, or this page's still on its way) is held a while, not dropped.
      if (outcome.kind === 'final' && !heldForReference(entry.event, outcome.error.code)) {
        // Another identity's chat (this browser switched accounts): kept for a page of that identity.
        if (!keptForItsIdentity(entry.event, outcome.error.code)) outbox.remove(id)
        options.refused(entry.event, outcome.error)
        settle(id, { error: outcome.error })
        return
      }
      outbox.failed(id)
      options.failed()
      await sleeps.sleep(delaysMs[Math.min(entry.failures, delaysMs.length - 1)])
    }
  }

  const deliver = (id: string) => {
    if (delivering.has(id)) return
    delivering.add(id)
    void options.queue.run(async () => {
      try {
        await deliverUntilSettled(id)
      } finally {
        delivering.delete(id)
      }
    })
  }

  return {
    push(events) {
      const acknowledged = events.map(
        (event) =>
          new Promise<A2Event[]>((resolve, reject) => {
            waiting.set(event.id, [...(waiting.get(event.id) ?? []), { resolve, reject }])
            outbox.add(event)
            deliver(event.id)
          }),
      )
      return Promise.all(acknowledged).then((lists) => lists.flat())
    },
    deliver,
    awaits: (id) => waiting.has(id),
    landed: (id, events) => settle(id, { events }),
  }
}
