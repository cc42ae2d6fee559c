/**
 * Migration 0005: a2_push, an append that starts and cancels runs in one statement; 0008
 * replaces it (split into a2_admit and a2_write, with a fence: ../internal/log/admitted-append.ts). The status lists are literals (see 0002);
 * migrate.test.ts checks them against OPEN_STATUSES.
 *
 * The duplicate check looks the client's ids up as `e.id = any(array(…))`, which any plan
 * answers from the (session_id, id) index. `e.id in (select jsonb_array_elements_text(…))` is a
 * semi-join whose generic plan (plpgsql caches one after five calls) read every event of the
 * session: 16–24 ms a push at 100k events until the next analyze (../session-length.test.ts:
 * two pushes into a 20k-event session read 40,001 rows that way, fewer than 20 by key).
 *
 * Past a cap (events, pushed bytes), a push still lands when each of its events is a cancel that
 * moves an open run: a Stop is never refused for the size of the log its own answer filled
 * (../session-caps.test.ts).
 */
export default /* sql */ `
-- ─── a2_push ─────────────────────────────────────────────────────────────────
-- A browser's push (and a server append that starts or cancels runs) in one round trip. The
-- transactional append took nine (begin, lock and reserve, duplicates, insert, jobs, the open
-- runs, the compare-and-set, their history, NOTIFY, commit) while holding the session's row
-- lock; a Stop pushed through the app's route took 14 statements and 8.6 ms at p50 on an idle
-- machine, 45 ms with ten answers streaming.
--
-- The order the transactional append keeps: the session's row lock first (nothing is written
-- until every check has passed, so a refusal leaves nothing behind), then the client ids'
-- duplicates, the caps, the events, their jobs, and each cancel's compare-and-set with its
-- history, then one NOTIFY. Each statement of a plpgsql function sees what committed before
-- it, so whatever committed while this waited for the lock is seen.
--
-- abortOn predicates are the app's code: the caller evaluates them on the open runs it read
-- before calling (p_cancels[].s: the job ids it saw, .t: the ones its predicate chose). If a
-- run it did not see is open now (a generate appended in between), nothing is written and
-- the answer is 'stale': the caller appends in a transaction instead. A cancel without a
-- predicate (no .s) cancels every open run of its consumer before the event, as it finds them.
--
-- p_events: [{ id, type, payload }] in order (ids assigned by the caller); p_client_ids: the
-- ids the client chose (duplicates are looked for only among those); p_jobs: [{ e: event
-- ordinal, c: consumer, l: lane, m: max attempts }]; p_cancels: [{ e, c, s?, t? }].
-- The caps (p_max_events, p_max_bytes) never refuse a Stop of an open run: past one, a push
-- lands only if each of its events is a cancel that moves an open run (ACTIVE, or UNKNOWN
-- with no cancel recorded). Each run is moved once, and no run opens past the cap (a push
-- that starts one is refused), so the log outgrows its cap by at most one Stop and one
-- terminal event per run opened before it. Checked after 'stale', so a cancel judged on a
-- stale read goes to the transactional append, which makes the same check.
--
-- One row answers: o_refused null with where the events start, or 'not_found', 'duplicate'
-- (o_existing: the stored events with those ids), 'session_full_events',
-- 'session_full_bytes' or 'stale'.
create or replace function a2_push(
  p_session text, p_owner text, p_events jsonb, p_client_ids jsonb, p_bytes bigint,
  p_max_events integer, p_max_bytes bigint, p_jobs jsonb, p_cancels jsonb,
  p_channel text, p_max_cancels_per_hint integer)
returns table (o_refused text, o_start integer, o_created_at timestamptz, o_existing jsonb, o_cancels jsonb)
language plpgsql as $$
declare
  v_count integer := jsonb_array_length(p_events);
  v_head integer;
  v_owner text;
  v_bytes bigint;
  v_existing jsonb;
  v_cancel record;
  v_by jsonb;
  v_moved jsonb := '[]'::jsonb;
  v_step jsonb;
  v_hint jsonb;
  v_full text;
begin
  select s.head, s.owner, s.pushed_bytes into v_head, v_owner, v_bytes
  from a2_sessions s where s.id = p_session for no key update;
  -- Someone else's session answers like a missing one: no existence oracle.
  if not found or (p_owner is not null and v_owner is distinct from p_owner) then
    return query select 'not_found'::text, null::integer, null::timestamptz, null::jsonb, null::jsonb;
    return;
  end if;
  if jsonb_array_length(p_client_ids) > 0 then
    select jsonb_agg(jsonb_build_object('id', e.id, 'session_id', e.session_id, 'index', e.index, 'type', e.type,
                                        'payload', e.payload, 'created_at', e.created_at) order by e.index)
      into v_existing
    from a2_events e
    where e.session_id = p_session and e.id = any(array(select jsonb_array_elements_text(p_client_ids)));
    if v_existing is not null then
      return query select 'duplicate'::text, null::integer, null::timestamptz, v_existing, null::jsonb;
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
    return query select 'stale'::text, null::integer, null::timestamptz, null::jsonb, null::jsonb;
    return;
  end if;
  v_full := case
    when p_max_events is not null and v_head + v_count > p_max_events then 'session_full_events'
    when p_max_bytes is not null and v_bytes + p_bytes > p_max_bytes then 'session_full_bytes'
  end;
  if v_full is not null and exists (
    select 1 from generate_series(0, v_count - 1) as g(e)
    where not exists (
      select 1
      from jsonb_array_elements(p_cancels) c
      join a2_jobs j on j.session_id = p_session and j.consumer = c.value ->> 'c'
      where (c.value ->> 'e')::integer = g.e
        and j.event_index < v_head + g.e
        and (j.status = 'ACTIVE' or (j.status = 'UNKNOWN' and j.cancelled_by is null))
        and (not c.value ? 's' or (c.value -> 't') @> to_jsonb(j.id)))
  ) then
    return query select v_full, null::integer, null::timestamptz, null::jsonb, null::jsonb;
    return;
  end if;

  update a2_sessions s
  set head = v_head + v_count, pushed_bytes = s.pushed_bytes + p_bytes,
      -- Only a person's push marks the session active (the list's order).
      updated_at = case when p_owner is not null then now() else s.updated_at end
  where s.id = p_session;
  insert into a2_events (session_id, index, id, type, payload)
  select p_session, v_head + (o.ord - 1)::integer, o.item ->> 'id', o.item ->> 'type', o.item -> 'payload'
  from jsonb_array_elements(p_events) with ordinality as o(item, ord);
  insert into a2_jobs (session_id, event_index, event_id, consumer, lane, max_attempts)
  select p_session, v_head + (o.item ->> 'e')::integer, p_events -> ((o.item ->> 'e')::integer) ->> 'id',
         o.item ->> 'c', o.item ->> 'l', (o.item ->> 'm')::integer
  from jsonb_array_elements(p_jobs) with ordinality as o(item, ord)
  order by o.ord;

  for v_cancel in
    select (o.item ->> 'e')::integer as e, o.item ->> 'c' as consumer, o.item ? 's' as chosen, o.item -> 't' as targets
    from jsonb_array_elements(p_cancels) with ordinality as o(item, ord)
    order by o.ord
  loop
    v_by := jsonb_build_object('id', p_events -> v_cancel.e ->> 'id', 'index', v_head + v_cancel.e, 'type', p_events -> v_cancel.e ->> 'type');
    -- Locked in id order first, as everywhere (0004_lane_heads): a lane head that closes now
    -- holds its row and then locks the lane's next job, which this may also be cancelling.
    with locked as (
      select j.id from a2_jobs j
      where j.session_id = p_session and j.consumer = v_cancel.consumer and j.event_index < v_head + v_cancel.e
        and (j.status = 'ACTIVE' or (j.status = 'UNKNOWN' and j.cancelled_by is null))
        and (not v_cancel.chosen or v_cancel.targets @> to_jsonb(j.id))
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
    select coalesce(jsonb_agg(jsonb_build_array(m.id, m.cancel_version, v_by ->> 'id', v_head + v_cancel.e) order by m.id), '[]'::jsonb)
      into v_step
    from moved m;
    v_moved := v_moved || v_step;
  end loop;

  v_hint := jsonb_build_object('s', p_session, 'h', v_head + v_count);
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
    (select jsonb_agg(jsonb_build_object('i', v_head + o.ord - 1, 'd', o.item ->> 'id', 't', o.item ->> 'type',
                                         'p', o.item -> 'payload', 'c', now()) order by o.ord)
     from jsonb_array_elements(p_events) with ordinality as o(item, ord)));
  return query select null::text, v_head, now(), null::jsonb, v_moved;
end
$$;
`
