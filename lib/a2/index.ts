/**
 * a2 — the isomorphic door: contracts and their types, the error class. Safe to import
 * from browser code. Server code uses `lib/a2/server`; React code `lib/a2/react`.
 */
export { defineContract, FAILED_TYPE, RENAMED_TYPE, checkJsonValue, checkText, MAX_JSON_DEPTH } from './internal/core/contract'
export type { A2Event, Contract, EventDefinition, EventInput, EventOf, EventTypes, PayloadOf } from './internal/core/contract'
export { A2Error, isA2Error, errorStatus } from './internal/core/errors'
export type { A2ErrorCode } from './internal/core/errors'
export type { CheckpointCodec, Fold, Folded, PartialCheckpoint } from './internal/core/types'
export { A2HttpError, httpErrorOf } from './internal/core/http-error'
export { heldByOutbox, outboxKeyOf } from './internal/browser/outbox'
export type { A2HttpErrorOptions } from './internal/core/http-error'
