/**
 * Retry sleeps that can be cut short: when the server is known to be back (the tail
 * reopened, the browser went online) or the store closed, every sleeping retry goes now,
 * not at the end of its delay (up to 1 s for a Stop, 3 s for a message).
 */
export class WakeableSleeps {
  private readonly sleepers = new Set<() => void>()

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.sleepers.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.sleepers.add(done)
    })
  }

  wakeAll(): void {
    for (const sleeper of [...this.sleepers]) sleeper()
  }
}
