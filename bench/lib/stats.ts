/**
 * Summaries of samples: medians and percentiles, never single runs. Nearest-rank
 * percentiles (p99 of 200 samples is the 198th smallest), so a figure is a value that
 * was actually observed.
 */
export interface Summary {
  n: number
  p50: number
  p90: number
  p99: number
  max: number
  min: number
  mean: number
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length))
  return sorted[Math.min(sorted.length, rank) - 1]
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = samples.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  const n = sorted.length
  return {
    n,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: n ? sorted[n - 1] : NaN,
    min: n ? sorted[0] : NaN,
    mean: n ? sorted.reduce((a, b) => a + b, 0) / n : NaN,
  }
}

/** Median of repeated throughput trials, with the spread kept beside it. */
export interface Trials {
  median: number
  min: number
  max: number
  trials: number[]
}

export function trials(values: readonly number[]): Trials {
  const sorted = [...values].sort((a, b) => a - b)
  return { median: percentile(sorted, 50), min: sorted[0], max: sorted[sorted.length - 1], trials: [...values] }
}

export function fmt(value: number | undefined, digits?: number): string {
  if (value === undefined || !Number.isFinite(value)) return '—'
  const abs = Math.abs(value)
  const d = digits ?? (abs >= 1000 ? 0 : abs >= 100 ? 0 : abs >= 10 ? 1 : 2)
  return value.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d })
}
