/**
 * What an answer's model calls cost, added up: an answer that waited for approval made two calls
 * (the one that asked, whose cost rides on its wait, and the one after the decision, on `finished`).
 */
import type { AnswerTurn } from './turns'

export type AnswerUsage = NonNullable<AnswerTurn['usage']>

export function addUsage(a: AnswerUsage | undefined, b: AnswerUsage | undefined): AnswerUsage | undefined {
  if (!a || !b) return a ?? b
  const sum: AnswerUsage = {}
  for (const key of ['inputTokens', 'outputTokens'] as const)
    if (a[key] !== undefined || b[key] !== undefined) sum[key] = (a[key] ?? 0) + (b[key] ?? 0)
  // Counted by the app in either call: the total is partly the app's count.
  if (a.counted || b.counted) sum.counted = true
  return sum
}
