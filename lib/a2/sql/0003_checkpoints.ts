/**
 * Migration 0003: fold checkpoints (../internal/log/checkpoints.ts).
 */
export default /* sql */ `
-- ─── a2_checkpoints ──────────────────────────────────────────────────────────
-- The state of a fold (an app's reducer) after events 0..at_index of a session's log. The
-- log is append-only, so a checkpoint stays true forever; a fold that changes its meaning
-- changes its name. Opening a session or starting an answer folds only the events after the
-- newest one (a 110k-event session: from ~1 s of reading and folding to a few ms). The state
-- is JSON as text, not jsonb: jsonb refuses the \\u0000 a log's text may hold. Deleted with
-- its session.
create table a2_checkpoints (
  session_id text not null,
  fold text not null,
  at_index integer not null,
  state text not null,
  created_at timestamptz not null default now(),
  constraint a2_checkpoints_session_id_fold_at_index_pk primary key (session_id, fold, at_index),
  constraint a2_checkpoints_session_id_a2_sessions_id_fk foreign key (session_id)
    references a2_sessions (id) on delete cascade
);
`
