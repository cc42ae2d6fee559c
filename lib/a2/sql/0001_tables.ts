/**
 * Migration 0001: a2's five tables. SQL kept as a string module, not a .sql file read at
 * runtime: Next bundles server code, and a string travels with the code that runs it.
 * Applied by `migrate()` (../internal/store/migrate.ts); never edit a shipped migration, add one.
 *
 * Constraint and index names follow drizzle-kit's style (`<table>_<column>_<ref>_fk`), so
 * the app's drizzle-kit migrations that refer to a2's tables read them the way they expect.
 */
export default /* sql */ `
-- ─── a2_sessions ─────────────────────────────────────────────────────────────
-- One conversation. \`head\` is the number of events in its log: the next append gets it as
-- its index, and updating it takes the session's row lock, which is what orders appends
-- (commit order = index order, README §1).
create table a2_sessions (
  id text primary key,
  owner text not null,
  title text not null default '',
  head integer not null default 0,
  -- Bytes of payload pushed by browsers (not the server's chunks): what a per-session byte cap counts.
  pushed_bytes bigint not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
-- An owner's sessions, most recent first: the session list.
create index a2_sessions_owner_updated on a2_sessions using btree (owner, updated_at);

-- ─── a2_events ───────────────────────────────────────────────────────────────
-- The log: (session, index) gapless from 0. Deleting a session deletes its log.
create table a2_events (
  session_id text not null,
  index integer not null,
  id text not null,
  type text not null,
  payload jsonb not null,
  created_at timestamptz not null default now(),
  constraint a2_events_session_id_index_pk primary key (session_id, index),
  constraint a2_events_session_id_a2_sessions_id_fk foreign key (session_id)
    references a2_sessions (id) on delete cascade
);
-- Event ids are unique per session, not globally: a client-chosen id can never collide with
-- (or probe for) an event in someone else's session.
create unique index a2_events_session_id on a2_events using btree (session_id, id);

-- ─── a2_jobs ─────────────────────────────────────────────────────────────────
-- One row per (event, consumer): the run. Its status moves only by compare-and-set
-- (README §5, §7); \`attempt\` is the fencing token of every write an attempt makes (§2).
create table a2_jobs (
  id bigserial primary key,
  session_id text not null,
  event_index integer not null,
  event_id text not null,
  consumer text not null,
  -- Lane key, or null for no lane: jobs of one (session, consumer, lane) run one at a time (§10).
  lane text,
  -- ACTIVE, CANCELLING, CANCELLED, COMPLETED, FAILED, UNKNOWN (RunStatus in transitions.ts).
  status text not null default 'ACTIVE',
  cancel_version integer not null default 0,
  -- The event that cancelled the run: { id, index, type }.
  cancelled_by jsonb,
  attempt integer not null default 0,
  max_attempts integer not null,
  run_at timestamptz not null default now(),
  owner text,
  -- The owner process's liveness key: its advisory lock, held on a connection of its own for
  -- as long as it lives (§9).
  owner_key integer,
  lease_until timestamptz,
  -- When CANCELLING began: the forced-cancel grace period counts from here.
  cancelling_since timestamptz,
  last_error jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint a2_jobs_session_id_a2_sessions_id_fk foreign key (session_id)
    references a2_sessions (id) on delete cascade
);
-- One job per event and consumer: an append that is retried cannot start a run twice.
create unique index a2_jobs_event_consumer on a2_jobs using btree (session_id, event_index, consumer);
-- The claim's scan: runnable jobs by time.
create index a2_jobs_runnable on a2_jobs using btree (run_at) where status = 'ACTIVE';
-- Every open run holds its lane, UNKNOWN ones included (OPEN_STATUSES).
create index a2_jobs_session_open on a2_jobs using btree (session_id, consumer)
  where status in ('ACTIVE', 'CANCELLING', 'UNKNOWN');
-- The liveness sweep looks only at runs held under a lease.
create index a2_jobs_owned on a2_jobs using btree (owner_key) where owner_key is not null;
-- The drain's grace-period check.
create index a2_jobs_cancelling on a2_jobs using btree (cancelling_since) where status = 'CANCELLING';
-- The operator view, most recently changed first.
create index a2_jobs_updated on a2_jobs using btree (updated_at);

-- ─── a2_job_transitions ──────────────────────────────────────────────────────
-- Every status change of a job, with its reason: how an operator explains a run afterwards.
-- No foreign key: a session's delete removes these by job id, in its own transaction.
create table a2_job_transitions (
  id bigserial primary key,
  job_id integer not null,
  attempt integer not null,
  from_status text,
  to_status text not null,
  reason text not null,
  detail jsonb,
  at timestamptz not null default now()
);
create index a2_job_transitions_job on a2_job_transitions using btree (job_id, id);

-- ─── a2_effects ──────────────────────────────────────────────────────────────
-- Side effects outside the log, one row per (job, stable key) (§6): INTENT → DISPATCHED →
-- DONE | FAILED, or CANCELLED_BEFORE_DISPATCH, or UNKNOWN (dispatched by an attempt that
-- died; reconciled later or by an operator). No foreign key, like the transitions.
create table a2_effects (
  job_id integer not null,
  key text not null,
  status text not null,
  attempt integer not null,
  cancel_version integer not null,
  result jsonb,
  error jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint a2_effects_job_id_key_pk primary key (job_id, key)
);
`
