/**
 * Migration 0008: one writer of the events that start or cancel runs. `a2_push` (0005) is
 * split at its seam into `a2_admit` (every check, under the session's lock, writing nothing)
 * and `a2_write` (the events, their jobs, each cancel's compare-and-set with its history, one
 * NOTIFY), and now also takes a fence and the runs whose steps it carries, so a consumer's
 * fenced append is one statement too. `a2_push` is the two in one statement; an append that
 * must commit with the caller's own rows (a run's FAILED status and its `a2.failed` event, a
 * rename) calls them in a transaction with its rows between (../internal/log/append.ts). The
 * fence and the step admission are `a2_step_refusal`, which the step batches
 * (`a2_append_steps_many`, re-created here whole) use too: each check is written once.
 *
 * A cancel may now name runs its own push starts (p_cancels[].n: the ordinals of those events
 * its abortOn predicate chose), which the caller judges on the events it sends; 0005 had to
 * refuse such a push to a transaction that read the runs back.
 *
 * The status lists are literals (see 0002); migrate.test.ts checks them against transitions.ts.
 */
export default /* sql */ `
drop function a2_push(text, text, jsonb, jsonb, bigint, integer, bigint, jsonb, jsonb, text, integer);

-- ─── a2_step_refusal ─────────────────────────────────────────────────────────
-- Why an append under a lease, or of a run's steps, may not land: 'fenced' (attempt p_attempt
-- no longer holds job p_job, share-locked until the caller's commit so it cannot be settled
-- under it) or 'run_cancelled' (a run of p_runs, event ids, is stopping or stopped: the
-- admission boundary); null when it may. The caller holds the session's row lock: a cancel of
-- this session's runs is itself an append, serialized behind it. Each run's event is found by
-- (session_id, id) and its job by (session_id, event_index), one equality each, which every
-- plan keeps as its index condition (../session-length.test.ts).
create or replace function a2_step_refusal(p_session text, p_job bigint, p_attempt integer, p_runs jsonb)
returns text
language plpgsql as $$
declare
  v_run text;
  v_index integer;
  v_stopped text;
begin
  if p_job is not null then
    perform 1 from a2_jobs j
      where j.id = p_job and j.session_id = p_session and j.attempt = p_attempt and j.status in ('ACTIVE', 'CANCELLING')
      for share;
    if not found then
      return 'fenced';
    end if;
  end if;
  for v_run in select jsonb_array_elements_text(coalesce(p_runs, '[]'::jsonb)) loop
    select e.index into v_index from a2_events e where e.session_id = p_session and e.id = v_run;
    select j.event_id || ' is ' || lower(j.status) into v_stopped from a2_jobs j
      where j.session_id = p_session and j.event_index = v_index and j.status in ('CANCELLING', 'CANCELLED')
      limit 1;
    if v_stopped is not null then
      return 'run_cancelled ' || v_stopped;
    end if;
  end loop;
  return null;
end
$$;

-- ─── a2_append_steps_many ────────────────────────────────────────────────────
-- As 0002 made it (its comment says why one statement carries many sessions' batches), with
-- the fence and admission in a2_step_refusal.
create or replace function a2_append_steps_many(p_batches jsonb, p_channel text)
returns table (o_batch integer, o_refused text, o_start integer, o_created_at timestamptz)
language plpgsql as $$
declare
  b record;
  v_count integer;
  v_start integer;
  v_refused text;
begin
  for b in
    select o.ord::integer as ord, o.item ->> 's' as session, (o.item ->> 'j')::bigint as job,
           (o.item ->> 'a')::integer as attempt, o.item -> 'r' as runs, o.item -> 'e' as events,
           (o.item ->> 'm')::integer as max_events
    from jsonb_array_elements(p_batches) with ordinality as o(item, ord)
    order by o.item ->> 's', o.ord
  loop
    v_count := jsonb_array_length(b.events);
    select s.head into v_start from a2_sessions s where s.id = b.session for no key update;
    if not found then
      return query select b.ord, 'not_found'::text, null::integer, null::timestamptz;
      continue;
    end if;
    v_refused := a2_step_refusal(b.session, b.job, b.attempt, b.runs);
    if v_refused is not null then
      return query select b.ord, split_part(v_refused, ' ', 1), null::integer, null::timestamptz;
      continue;
    end if;
    if b.max_events is not null and v_start + v_count > b.max_events then
      return query select b.ord, 'session_full'::text, null::integer, null::timestamptz;
      continue;
    end if;
    update a2_sessions s set head = s.head + v_count where s.id = b.session;
    insert into a2_events (session_id, index, id, type, payload)
    select b.session, v_start + (o.ord - 1)::integer, o.item ->> 'id', o.item ->> 'type', o.item -> 'payload'
    from jsonb_array_elements(b.events) with ordinality as o(item, ord);
    -- The caller has the events; it needs only where they landed. created_at defaults to
    -- now(), the transaction's start, so one value states it for every event (and the hint).
    return query select b.ord, null::text, v_start, now();
    perform a2_notify(
      p_channel,
      jsonb_build_object('s', b.session, 'h', v_start + v_count),
      (select jsonb_agg(jsonb_build_object('i', v_start + o.ord - 1, 'd', o.item ->> 'id', 't', o.item ->> 'type',
                                           'p', o.item -> 'payload', 'c', now()) order by o.ord)
       from jsonb_array_elements(b.events) with ordinality as o(item, ord)));
  end loop;
end
$$;

-- ─── a2_admit ────────────────────────────────────────────────────────────────
-- Every check of a push, in order, under the session's row lock (held to the caller's
-- commit), writing nothing: the owner (someone else's session answers like a missing one: no
-- existence oracle), the client ids' duplicates (o_existing: the stored events with those ids;
-- a retry of a push that landed is answered even in a full session), 'stale', the caps, the
-- step cap, the fence and the step admission. One row answers: o_refused null with the head
-- the events will start at, or the refusal: 'not_found', 'duplicate', 'stale',
-- 'session_full_events', 'session_full_bytes', 'fenced' or 'run_cancelled <run> is <status>'.
--
-- The client's ids are looked up as e.id = any(array(…)), which any plan answers from the
-- (session_id, id) index; an in (select …) semi-join's generic plan (plpgsql caches one after
-- five calls) read every event of the session (../session-length.test.ts).
--
-- abortOn predicates are the app's code: the caller judged them on the open runs it read
-- (p_cancels[].s: the job ids it saw, .t: those its predicate chose). If a run it did not see
-- is open now (a generate appended in between), the answer is 'stale' and the caller judges
-- again under the lock. A cancel without a predicate (no .s) takes every open run of its
-- consumer before the event, as it finds them.
--
-- The caps (p_max_events, p_max_bytes) never refuse a Stop of an open run: past one, a push
-- lands only if each of its events is a cancel that moves an open run (ACTIVE, or UNKNOWN with
-- no cancel recorded). Each run is moved once, and no run opens past the cap (a push that
-- starts one is refused), so the log outgrows its cap by at most one Stop and one terminal
-- event per run opened before it (../session-caps.test.ts). A step (p_step_runs not empty)
-- counts against p_step_cap: the log's size, chunks included.
create or replace function a2_admit(
  p_session text, p_owner text, p_count integer, p_client_ids jsonb, p_bytes bigint,
  p_max_events integer, p_max_bytes bigint, p_cancels jsonb,
  p_fence_job bigint, p_fence_attempt integer, p_step_runs jsonb, p_step_cap integer)
returns table (o_refused text, o_head integer, o_existing jsonb)
language plpgsql as $$
declare
  v_head integer;
  v_owner text;
  v_bytes bigint;
  v_existing jsonb;
  v_full text;
  v_refused text;
begin
  select s.head, s.owner, s.pushed_bytes into v_head, v_owner, v_bytes
  from a2_sessions s where s.id = p_session for no key update;
  if not found or (p_owner is not null and v_owner is distinct from p_owner) then
    return query select 'not_found'::text, null::integer, null::jsonb;
    return;
  end if;
  if jsonb_array_length(p_client_ids) > 0 then
    select jsonb_agg(jsonb_build_object('id', e.id, 'session_id', e.session_id, 'index', e.index, 'type', e.type,
                                        'payload', e.payload, 'created_at', e.created_at) order by e.index)
      into v_existing
    from a2_events e
    where e.session_id = p_session and e.id = any(array(select jsonb_array_elements_text(p_client_ids)));
    if v_existing is not null then
      return query select 'duplicate'::text, null::integer, v_existing;
      return;
    end if;
  end if;
  if exists (
    select 1
    from jsonb_array_elements(p_cancels) c
    join a2_jobs j on j.session_id = p_session and j.consumer = c.value ->> 'c'
    where c.value ? 's'
      and j.event_index < v_head + (c.value ->> 'e')::integer
      and (j.status = 'ACTIVE' or (j.status = 'UNKNOWN' and j.cancelled_by is null))
      and not (c.value -> 's') @> to_jsonb(j.id)
  ) then
    return query select 'stale'::text, null::integer, null::jsonb;
    return;
  end if;
  v_full := case
    when p_max_events is not null and v_head + p_count > p_max_events then 'session_full_events'
    when p_max_bytes is not null and v_bytes + p_bytes > p_max_bytes then 'session_full_bytes'
  end;
  if v_full is not null and exists (
    select 1 from generate_series(0, p_count - 1) as g(e)
    where not exists (
      select 1
      from jsonb_array_elements(p_cancels) c
      join a2_jobs j on j.session_id = p_session and j.consumer = c.value ->> 'c'
      where (c.value ->> 'e')::integer = g.e
        and j.event_index < v_head + g.e
        and (j.status = 'ACTIVE' or (j.status = 'UNKNOWN' and j.cancelled_by is null))
        and (not c.value ? 's' or (c.value -> 't') @> to_jsonb(j.id)))
  ) then
    return query select v_full, null::integer, null::jsonb;
    return;
  end if;
  if p_step_cap is not null and jsonb_array_length(coalesce(p_step_runs, '[]'::jsonb)) > 0 and v_head + p_count > p_step_cap then
    return query select 'session_full_events'::text, null::integer, null::jsonb;
    return;
  end if;
  v_refused := a2_step_refusal(p_session, p_fence_job, p_fence_attempt, p_step_runs);
  if v_refused is not null then
    return query select v_refused, null::integer, null::jsonb;
    return;
  end if;
  return query select null::text, v_head, null::jsonb;
end
$$;

-- ─── a2_write ────────────────────────────────────────────────────────────────
-- What a2_admit allowed, at p_head (the head it answered, under the lock the caller still
-- holds): the events, their jobs, each cancel's compare-and-set with its history, then one
-- NOTIFY on p_channel. p_events: [{ id, type, payload }] in order (ids assigned by the
-- caller); p_jobs: [{ e: event ordinal, c: consumer, l: lane, m: max attempts }]; p_cancels:
-- [{ e, c, s?, t?, n? }] (n: ordinals of this push's events whose runs the predicate chose).
-- Answers where the events start, their created_at and the cancels recorded
-- ([job, cancel_version, event id, event index] each).
create or replace function a2_write(
  p_session text, p_owner text, p_head integer, p_events jsonb, p_bytes bigint, p_jobs jsonb, p_cancels jsonb,
  p_channel text, p_max_cancels_per_hint integer)
returns table (o_start integer, o_created_at timestamptz, o_cancels jsonb)
language plpgsql as $$
declare
  v_count integer := jsonb_array_length(p_events);
  v_cancel record;
  v_by jsonb;
  v_moved jsonb := '[]'::jsonb;
  v_step jsonb;
  v_hint jsonb;
begin
  update a2_sessions s
  set head = p_head + v_count, pushed_bytes = s.pushed_bytes + p_bytes,
      -- Only a person's push marks the session active (the list's order); a server append
      -- leaves updated_at alone, so its update stays a heap-only (HOT) one.
      updated_at = case when p_owner is not null then now() else s.updated_at end
  where s.id = p_session;
  insert into a2_events (session_id, index, id, type, payload)
  select p_session, p_head + (o.ord - 1)::integer, o.item ->> 'id', o.item ->> 'type', o.item -> 'payload'
  from jsonb_array_elements(p_events) with ordinality as o(item, ord);
  insert into a2_jobs (session_id, event_index, event_id, consumer, lane, max_attempts)
  select p_session, p_head + (o.item ->> 'e')::integer, p_events -> ((o.item ->> 'e')::integer) ->> 'id',
         o.item ->> 'c', o.item ->> 'l', (o.item ->> 'm')::integer
  from jsonb_array_elements(p_jobs) with ordinality as o(item, ord)
  order by o.ord;

  for v_cancel in
    select (o.item ->> 'e')::integer as e, o.item ->> 'c' as consumer, o.item ? 's' as chosen, o.item -> 't' as targets,
           coalesce(o.item -> 'n', '[]'::jsonb) as started_here
    from jsonb_array_elements(p_cancels) with ordinality as o(item, ord)
    order by o.ord
  loop
    v_by := jsonb_build_object('id', p_events -> v_cancel.e ->> 'id', 'index', p_head + v_cancel.e, 'type', p_events -> v_cancel.e ->> 'type');
    -- Locked in id order first, as everywhere (0004_lane_heads): a lane head that closes now
    -- holds its row and then locks the lane's next job, which this may also be cancelling.
    with locked as (
      select j.id from a2_jobs j
      where j.session_id = p_session and j.consumer = v_cancel.consumer and j.event_index < p_head + v_cancel.e
        and (j.status = 'ACTIVE' or (j.status = 'UNKNOWN' and j.cancelled_by is null))
        and (not v_cancel.chosen or v_cancel.targets @> to_jsonb(j.id) or v_cancel.started_here @> to_jsonb(j.event_index - p_head))
      order by j.id
      for no key update
    ), moved as (
      update a2_jobs j
      set status = case when j.status = 'ACTIVE' then 'CANCELLING' else j.status end,
          cancel_version = j.cancel_version + 1, cancelled_by = v_by,
          cancelling_since = case when j.status = 'ACTIVE' then now() else j.cancelling_since end, updated_at = now()
      from locked
      where j.id = locked.id and (j.status = 'ACTIVE' or (j.status = 'UNKNOWN' and j.cancelled_by is null))
      returning j.id, j.attempt, j.cancel_version, j.status
    ), recorded as (
      insert into a2_job_transitions (job_id, attempt, from_status, to_status, reason, detail)
      select m.id, m.attempt, case when m.status = 'UNKNOWN' then 'UNKNOWN' else 'ACTIVE' end, m.status, 'CANCEL_APPENDED', v_by
      from moved m
    )
    select coalesce(jsonb_agg(jsonb_build_array(m.id, m.cancel_version, v_by ->> 'id', p_head + v_cancel.e) order by m.id), '[]'::jsonb)
      into v_step
    from moved m;
    v_moved := v_moved || v_step;
  end loop;

  v_hint := jsonb_build_object('s', p_session, 'h', p_head + v_count);
  if jsonb_array_length(p_jobs) > 0 then
    v_hint := v_hint || jsonb_build_object('j', 1);
  end if;
  if jsonb_array_length(v_moved) > p_max_cancels_per_hint then
    v_hint := v_hint || jsonb_build_object('C', 1);
  elsif jsonb_array_length(v_moved) > 0 then
    v_hint := v_hint || jsonb_build_object('c', v_moved);
  end if;
  perform a2_notify(
    p_channel, v_hint,
    (select jsonb_agg(jsonb_build_object('i', p_head + o.ord - 1, 'd', o.item ->> 'id', 't', o.item ->> 'type',
                                         'p', o.item -> 'payload', 'c', now()) order by o.ord)
     from jsonb_array_elements(p_events) with ordinality as o(item, ord)));
  return query select p_head, now(), v_moved;
end
$$;

-- ─── a2_push ─────────────────────────────────────────────────────────────────
-- A push in one round trip: a2_admit, then a2_write when it allowed it. What a Stop waits for:
-- a transaction doing the same took nine round trips under the session's lock (a Stop through
-- the app's route: 14 statements, 8.6 ms p50 idle, 45 ms with ten answers streaming).
create or replace function a2_push(
  p_session text, p_owner text, p_events jsonb, p_client_ids jsonb, p_bytes bigint,
  p_max_events integer, p_max_bytes bigint, p_jobs jsonb, p_cancels jsonb,
  p_fence_job bigint, p_fence_attempt integer, p_step_runs jsonb, p_step_cap integer,
  p_channel text, p_max_cancels_per_hint integer)
returns table (o_refused text, o_start integer, o_created_at timestamptz, o_existing jsonb, o_cancels jsonb)
language plpgsql as $$
declare
  v_admitted record;
  v_written record;
begin
  select * into v_admitted from a2_admit(p_session, p_owner, jsonb_array_length(p_events), p_client_ids, p_bytes,
                                         p_max_events, p_max_bytes, p_cancels, p_fence_job, p_fence_attempt, p_step_runs, p_step_cap);
  if v_admitted.o_refused is not null then
    return query select v_admitted.o_refused, null::integer, null::timestamptz, v_admitted.o_existing, null::jsonb;
    return;
  end if;
  select * into v_written from a2_write(p_session, p_owner, v_admitted.o_head, p_events, p_bytes, p_jobs, p_cancels,
                                        p_channel, p_max_cancels_per_hint);
  return query select null::text, v_written.o_start, v_written.o_created_at, null::jsonb, v_written.o_cancels;
end
$$;
`
