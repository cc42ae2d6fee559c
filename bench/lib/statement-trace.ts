/**
 * Figure 9's optional trace (`--trace`), in the app process: for a request the client marks
 * with `x-bench-trace: <tag>`, when it arrived, every statement its handler sent through the
 * store (what it was, when it was sent, when its answer came back) and when the response was
 * written, all on the machine's shared clock. Off by default: it wraps the store's `execute`
 * and runs every traced request in an AsyncLocalStorage (async hooks on every promise of the
 * process), which the measured figure must not pay.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import type http from 'node:http'
import { PgDialect } from 'drizzle-orm/pg-core'
import type { SQL } from 'drizzle-orm'
import type { Store } from '@/lib/a2/server'
import { wallNow } from './time'

export const TRACE_HEADER = 'x-bench-trace'

export interface RequestTrace {
  tag: string
  arrived: number
  /** [what, sent, answered] per statement, in the order they were sent. */
  statements: Array<[string, number, number]>
  /**
   * Per statement, how many of the process's statements were in flight when it was sent (its
   * own included): past the pool's 10 connections, postgres-js queues it behind a busy one.
   */
  inFlight: number[]
  written?: number
}

/** What a statement is, from its text: the push's read, `a2_push`, the rate limits, or its first words. */
export function statementKind(text: string): string {
  if (text.includes('a2_push(')) return 'a2_push'
  if (text.includes('rate_limits')) return 'limits'
  if (/from a2_sessions s where s\.id/.test(text) && text.includes('jsonb_agg')) return 'read'
  return text.trim().split(/\s+/).slice(0, 3).join(' ')
}

export function traceStatements(store: Store, report: (trace: RequestTrace) => void) {
  const current = new AsyncLocalStorage<RequestTrace>()
  const dialect = new PgDialect()
  const db = store.db as unknown as { execute: (query: SQL) => PromiseLike<unknown> }
  const execute = db.execute.bind(db)
  let inFlight = 0
  db.execute = (query: SQL) => {
    const trace = current.getStore()
    inFlight++
    // One `then` on drizzle's query (each `then` would run it again); the caller awaits this promise.
    const answered = Promise.resolve(execute(query))
    const done = () => void inFlight--
    answered.then(done, done)
    if (!trace) return answered
    const entry: [string, number, number] = [statementKind(dialect.sqlToQuery(query).sql), wallNow(), 0]
    trace.statements.push(entry)
    trace.inFlight.push(inFlight)
    answered.then(
      () => (entry[2] = wallNow()),
      () => (entry[2] = wallNow()),
    )
    return answered
  }
  return {
    /** Runs `serve` for `req`, traced when the client asked for it. */
    wrap(req: http.IncomingMessage, res: http.ServerResponse, serve: () => void): void {
      const tag = req.headers[TRACE_HEADER]
      if (typeof tag !== 'string') return serve()
      const trace: RequestTrace = { tag, arrived: wallNow(), statements: [], inFlight: [] }
      res.once('finish', () => {
        trace.written = wallNow()
        report(trace)
      })
      current.run(trace, serve)
    },
  }
}
