/**
 * Writes a stream's deltas to the log, batched per transaction by group commit: at most
 * one append is in flight per answer, and deltas that arrive while it commits go together
 * in the next one (`generate` joins them into one `chunk` event: joinDeltas below). With a
 * fast store that is one delta per transaction and no added latency; under load the
 * batches grow by themselves instead of queueing transactions. A fixed window would add
 * half its length to every token's latency (a 20 ms window: ~10 ms at p50, over the 5 ms
 * budget in the benchmark), so there is none.
 */
import { isA2Error } from '@/lib/a2'

/** 64 deltas per transaction caps one insert's size when the store stalls and a backlog forms. */
const MAX_BATCH = 64

/**
 * What an answer may hold unwritten (UTF-8 bytes, the batch in flight included) before the
 * model's stream is held back (`room()`): 256 KiB. While the store is away (a Postgres restart,
 * outage.ts) the append in flight is sent again and the deltas wait here; nothing is dropped
 * and, once the store answers, they go in order. At a fast provider's 2,000 tokens/s (~4 bytes
 * each) an outage as long as the chat's 15 s lease is ~120 KB, so the bound is never what ends
 * a wait a lease allows; past it the stream is not read (the HTTP stream's own backpressure
 * holds the model), and a worker's 64 answers hold at most 16 MiB.
 */
export const MAX_BUFFERED_BYTES = 256 * 1024

export interface ChunkWriter<T = string> {
  add(item: T): void
  /** Resolves when every added item is in the log (or was refused because the run was cancelled). */
  flush(): Promise<void>
  /** Stops writing: whatever is buffered is dropped (used when the user stopped the answer). */
  drop(): void
  /**
   * Resolves when fewer than MAX_BUFFERED_BYTES wait unwritten (at once, mostly): the caller
   * reads the model's next part only then, so a stalled store holds the stream back.
   */
  room(): Promise<void>
  /** The run was cancelled: the log refused a batch at the admission boundary. */
  readonly refused: boolean
}

/** An item's size against the bound: a string's UTF-8 bytes, anything else's as JSON. */
function byteLengthOf(item: unknown): number {
  return Buffer.byteLength(typeof item === 'string' ? item : JSON.stringify(item))
}

/**
 * Items go to `write` in the order they were added: one answer's steps of every kind (text,
 * reasoning, tool input: lib/chat/answer/steps.ts) are one ordered stream, so one cut applies to all.
 *
 * @param onFailure called once when a write fails for any reason other than the run being
 *   cancelled, so the caller can stop the model at once instead of streaming to nowhere.
 */
export function chunkWriter<T = string>(
  write: (items: T[]) => Promise<void>,
  onFailure: (error: unknown) => void = () => {},
  maxBufferedBytes = MAX_BUFFERED_BYTES,
): ChunkWriter<T> {
  let buffer: T[] = []
  /** UTF-8 bytes of `buffer` and of the batch in flight. */
  let bytes = 0
  let waiters: Array<() => void> = []
  let inFlight: Promise<void> | undefined
  let failure: unknown
  let refused = false
  let dropped = false

  const pump = (): Promise<void> => {
    if (inFlight || buffer.length === 0 || dropped || refused || failure) return inFlight ?? Promise.resolve()
    const batch = buffer.slice(0, MAX_BATCH)
    buffer = buffer.slice(batch.length)
    const batchBytes = batch.reduce((n, item) => n + byteLengthOf(item), 0)
    inFlight = write(batch)
      .then(() => void (bytes -= batchBytes))
      .catch((error) => {
        if (isA2Error(error, 'run_cancelled')) refused = true
        else {
          failure = error
          onFailure(error)
        }
      })
      .finally(() => {
        inFlight = undefined
        void pump()
        wakeIfRoom()
      })
    return inFlight
  }
  const closed = () => dropped || refused || failure !== undefined
  const wakeIfRoom = () => {
    if (bytes >= maxBufferedBytes && !closed()) return
    const woken = waiters
    waiters = []
    for (const wake of woken) wake()
  }

  return {
    add(item) {
      if (dropped || refused || failure || item === '') return
      buffer.push(item)
      bytes += byteLengthOf(item)
      void pump()
    },
    room() {
      if (bytes < maxBufferedBytes || closed()) return Promise.resolve()
      return new Promise((resolve) => waiters.push(resolve))
    },
    async flush() {
      while ((inFlight || buffer.length > 0) && !dropped && !refused && !failure) await pump()
      if (inFlight) await inFlight
      if (failure) throw failure
    },
    drop() {
      dropped = true
      buffer = []
      wakeIfRoom()
    },
    get refused() {
      return refused
    },
  }
}

/**
 * The deltas of one append as the chunk events it writes: neighbours joined while the
 * joined text stays within `maxChars` (the contract's bound). Deltas wait together only
 * while the answer's previous append commits, so joining them delays none, and the reader
 * still sees whole chunk events (a Stop's lastSeenIndex cuts exactly what they saw). Under
 * load that is one event per append instead of one per token: a row, a NOTIFY entry and an
 * SSE frame on every tail, each. Bench figure 2 at 100 streams (~4-9 tokens per append), 7
 * alternated runs each: Postgres CPU per token median 125 → 92 µs, all processes 1.34× →
 * 1.19× the direct route's; token latency did not move beyond this machine's noise. A delta
 * longer than `maxChars` is never cut (it could split a surrogate pair): it goes alone.
 */
export function joinDeltas(deltas: readonly string[], maxChars: number): string[] {
  const out: string[] = []
  for (const delta of deltas) {
    if (!delta) continue
    const last = out.length - 1
    if (last >= 0 && out[last].length + delta.length <= maxChars) out[last] += delta
    else out.push(delta)
  }
  return out
}
