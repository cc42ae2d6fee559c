/**
 * Migration 0007: a2_effects.overlap_safe — the effect's call may run twice at once under its
 * idempotency key with no harm (`ctx.effect(key, fn, { overlapSafe: true })`). The drain
 * releases a run whose owner is judged gone only when none of its attempt's effects in flight
 * is otherwise (../internal/runtime/drain.ts), and a reconcile hook's "not done" is trusted for an
 * overlap-safe effect of a released attempt (../internal/runtime/effects.ts). Liveness can be wrong: for
 * any other effect the old call may still be running, and the run waits for its lease.
 */
export default /* sql */ `
alter table a2_effects add column overlap_safe boolean not null default false;
`
