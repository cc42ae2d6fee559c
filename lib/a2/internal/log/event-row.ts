/**
 * An a2_events row → an A2Event, written once: every statement that reads events selects
 * EVENT_COLUMNS (or the same names) and maps its rows here.
 */
import { sql } from 'drizzle-orm'
import type { A2Event } from '../core/contract'

/** An event row as a raw statement returns it (postgres-js gives a Date, PGlite too; JSON a string). */
export interface EventRow {
  id: string
  session_id: string
  index: number
  type: string
  payload: unknown
  created_at: Date | string
}

/** The columns EventRow names, for `select ${EVENT_COLUMNS} from a2_events …`. */
export const EVENT_COLUMNS = sql.raw('id, session_id, index, type, payload, created_at')

export function eventFromRow(row: EventRow): A2Event {
  return {
    id: row.id,
    sessionId: row.session_id,
    index: row.index,
    type: row.type,
    payload: row.payload,
    createdAt: isoTime(row.created_at),
  }
}

/** Timestamps as events carry them: ISO 8601 in UTC, to the millisecond. */
export function isoTime(value: Date | string): string {
  return new Date(value).toISOString()
}

/** Rows aggregated into a jsonb column (`jsonb_agg(…)`): parsed by postgres-js and PGlite alike, a string on a raw path, null for none. */
export function jsonbRows<T>(value: T[] | string | null): T[] {
  if (value === null) return []
  return typeof value === 'string' ? (JSON.parse(value) as T[]) : value
}
