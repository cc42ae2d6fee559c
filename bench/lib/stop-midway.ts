/**
 * One Stop pressed in the middle of an answer through the log, timed to the moment a request
 * the answer has open is seen closed by its server: figure 1 (the model's request, at the
 * upstream) and figure 11 (a tool call's request, at the webhook receiver) are this one
 * measurement with a different request watched.
 *
 * Each Stop: a new session, push message + generate, wait until the watched request is in
 * flight, a random 0–60 ms more (a random point in it), push `cancelled`, then wait for the
 * server's close.
 */
import { performance } from 'node:perf_hooks'
import type { ChatRig } from './rig'
import type { WatchedRequest } from './watched-request'
import { OWNER } from './http'
import { sleep, within } from './time'

export interface StopSample {
  /** push resolved → the watched request closed */
  fromAccepted: number
  /** push called → the watched request closed */
  fromCalled: number
  /** how long the cancel push itself took */
  pushMs: number
  closedEarly: boolean
}

export async function stopMidway(
  rig: ChatRig,
  options: {
    /** The user's message: what makes the model (the bench upstream) answer as the figure needs. */
    text: string
    /** Resolves once the request to watch is in flight. */
    inFlight: () => Promise<WatchedRequest>
    pointMs: () => number
    what: string
  },
): Promise<StopSample> {
  const { id } = await rig.chat.sessions.create(OWNER)
  await rig.chat.push(id, OWNER, {
    events: [
      { id: 'm', type: 'message', payload: { text: options.text } },
      { id: 'g', type: 'generate', payload: { for: 'm' } },
    ],
  })
  const request = await options.inFlight()
  await sleep(options.pointMs())
  const called = performance.now()
  await rig.chat.push(id, OWNER, { id: 'c', type: 'cancelled', payload: { of: 'g', lastSeenIndex: 1 } })
  const accepted = performance.now()
  await within(request.closed, 15_000, `${options.what} to close after Stop`)
  return {
    fromAccepted: request.closedAt! - accepted,
    fromCalled: request.closedAt! - called,
    pushMs: accepted - called,
    closedEarly: request.closedEarly,
  }
}
