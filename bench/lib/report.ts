/**
 * The results: one row per figure (ours beside its baseline, measured in the same run),
 * printed as a table and written to bench/results/latest.json with every sample summary.
 */
import { fmt } from './stats'

export interface Row {
  /** e.g. "1 stop latency p50" */
  figure: string
  unit: string
  ours: number
  baseline?: number
  /** What "baseline" is, when it is not a like-for-like baseline (e.g. a reference anchor). */
  baselineLabel?: string
  /** ours / baseline (latencies and memory: lower is better; throughputs: higher is better). */
  ratio?: number
  target?: { op: '<=' | '>='; value: number }
  note?: string
}

export function row(figure: string, unit: string, ours: number, baseline?: number, extra: Partial<Row> = {}): Row {
  const ratio = baseline !== undefined && Number.isFinite(baseline) && baseline !== 0 ? ours / baseline : undefined
  return { figure, unit, ours, baseline, ratio, ...extra }
}

export function meets(r: Row): boolean | undefined {
  if (!r.target) return undefined
  return r.target.op === '<=' ? r.ours <= r.target.value : r.ours >= r.target.value
}

export function table(rows: Row[]): string {
  const header = ['figure', 'ours', 'baseline', 'ratio', 'target']
  const body = rows.map((r) => [
    `${r.figure} (${r.unit})`,
    fmt(r.ours),
    r.baselineLabel ? `${fmt(r.baseline)} ${r.baselineLabel}` : fmt(r.baseline),
    r.ratio === undefined ? '—' : `${fmt(r.ratio, r.ratio >= 10 ? 1 : 2)}×`,
    r.target ? `${r.target.op} ${fmt(r.target.value)} ${meets(r) ? 'met' : 'MISSED'}` : '',
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)))
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`
  return [
    line(header),
    `|${widths.map((w, i) => (i === 0 ? ':' : '') + '-'.repeat(w + 1) + (i === 0 ? '' : ':')).join('|')}|`,
    ...body.map(line),
  ].join('\n')
}
