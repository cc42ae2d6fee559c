/**
 * Tasks that run one after another in the order they were queued, whatever became of the one
 * before: a session's pushes leave in the order they were made, so a Stop pressed right after
 * Send reaches the log after the `generate` it names, or it would cancel nothing.
 */
export class OrderedQueue {
  private last: Promise<void> = Promise.resolve()

  /** Runs `task` once every task queued before it has settled; its outcome is the caller's. */
  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.last.then(task)
    this.last = result.then(
      () => undefined,
      () => undefined,
    )
    return result
  }
}
