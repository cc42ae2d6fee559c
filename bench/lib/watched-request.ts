/**
 * A request as the server that received it saw it (performance.now() of this process: the
 * bench's upstream and webhook receiver run here): what a Stop's figure times the close of.
 */
export interface WatchedRequest {
  closed: Promise<void>
  closedAt?: number
  /** The client went away before the server answered it in full. */
  closedEarly: boolean
}
