/**
 * a2 — the server door: the store, consumers, the server (append, push, read, tail,
 * workers, the operator view) and the HTTP helpers for route handlers.
 */
export * from './index'
export { openPostgresStore, openPgliteStore } from './internal/store'
export type { Store, Db, Executor } from './internal/store'
export { migrate } from './internal/migrate'
export type { MigrateResult } from './internal/migrate'
export { consumer } from './internal/consumer'
export type { Consumer, ConsumerOptions, RunContext, RunEnding, ReconcileResult } from './internal/consumer'
export { createServer, MAX_EVENTS_PER_PUSH } from './internal/server'
export type { A2Server, PushFound } from './internal/server'
export { RunAborted, abortReason, isStop } from './internal/abort'
export type { AbortCode } from './internal/abort'
export { EffectNotDispatched, EffectUnknown } from './internal/effects'
export type { EffectStatus, EffectOptions } from './internal/effects'
export type { Worker, WorkerOptions } from './internal/worker'
export type { RunStatus } from './internal/transitions'
export type { SessionSummary, SessionCaps, SessionMatch, OpenRun } from './internal/log'
export * as schema from './schema'
export { errorResponse, readJsonBody, sseResponse } from './internal/http'
export { readPages, readAll, DEFAULT_PAGE_SIZE } from './internal/pages'
export type { PageReader } from './internal/pages'
