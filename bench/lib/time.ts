import { performance } from 'node:perf_hooks'

/** Milliseconds on a clock shared by every process on this machine (wall clock, sub-ms resolution). */
export const wallNow = (): number => performance.timeOrigin + performance.now()

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Resolves with `promise`, or rejects after `ms` with `what` in the message. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)
    }),
  ])
}

/** Polls `check` until it is truthy or `ms` passes. */
export async function until(check: () => boolean | Promise<boolean>, ms: number, what: string, everyMs = 5): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${ms} ms`)
    await sleep(everyMs)
  }
}

export const randomBetween = (lo: number, hi: number): number => lo + Math.random() * (hi - lo)
export const randomInt = (lo: number, hi: number): number => Math.floor(randomBetween(lo, hi + 1))
