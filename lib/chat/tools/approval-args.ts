/**
 * What an approval binds to of a call's arguments: the SHA-256 of their canonical JSON (object
 * keys sorted, at every depth), in hex. The wait shows it (`tool.state.approval.args`), a decision
 * names it, and admission recomputes it from the call as the log holds it: a decision for other
 * arguments than the ones the user was shown is refused. Server-only (node:crypto).
 */
import { createHash } from 'node:crypto'

export function argsHash(input: unknown): string {
  return createHash('sha256').update(canonicalJson(input)).digest('hex')
}

/** JSON with every object's keys in code-point order: the same arguments give the same text whoever wrote them. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return 'null'
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
}
