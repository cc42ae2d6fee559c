/** Runs `count` tasks with at most `concurrency` at once; a failed task is recorded, not fatal. */
export async function runPool<T>(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<T>,
  options: { deadline?: number } = {},
): Promise<{ results: T[]; errors: unknown[]; timedOut: boolean }> {
  const results: T[] = []
  const errors: unknown[] = []
  let next = 0
  let timedOut = false
  const lane = async () => {
    while (next < count) {
      if (options.deadline !== undefined && Date.now() > options.deadline) {
        timedOut = true
        return
      }
      const i = next++
      try {
        results.push(await task(i))
      } catch (error) {
        errors.push(error)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane))
  return { results, errors, timedOut }
}

export function firstError(errors: unknown[]): string | undefined {
  if (errors.length === 0) return undefined
  const e = errors[0]
  return `${errors.length} failed; first: ${e instanceof Error ? e.message : String(e)}`
}
