/**
 * Migration 0002: the append functions, a2's hot path (../internal/log/batched-appends.ts).
 *
 * The status lists inside are literals, not the constants of transitions.ts: a migration
 * is frozen once shipped, and a changed constant must come with a new migration. The
 * schema test checks that these lists still equal LEASED_STATUSES and STOPPED_STATUSES.
 *
 * A step batch carries the session's cap on events, and one that would take the session past it
 * is refused 'session_full': the caps are the size of the log (chunks count), and a Stop is
 * never refused by them (0005; ../session-caps.test.ts).
 *
 * A chunk batch's admission check (the batch's runs are not stopped) finds each run's event by
 * (session_id, id) and its job by (session_id, event_index), one equality each, which every
 * plan takes as its index condition. Looking the runs up as `j.event_id in (…)` among the
 * session's stopped runs read every run of the session (no index leads with (session_id,
 * event_id)): 1,000 rows a batch in a session of 1,000 answers (../session-length.test.ts);
 * an `= any(…)` over the same keys was left out of the index condition when the statistics
 * were stale. A job's event_id is the id of the event at its event_index, in its session.
 */
export default /* sql */ `
-- ─── a2_notify ───────────────────────────────────────────────────────────────
-- The NOTIFY of an append: its hint (see ../internal/log/bus.ts) carries the appended events too
-- when they fit, so a tail that is up to date takes them from the notification instead of
-- reading them back (at 100 streams the app process's reads were ~30% of its CPU). 7,900
-- bytes keeps the payload under NOTIFY's 8,000-byte limit; bigger appends announce their
-- head only, and tails read.
create or replace function a2_notify(p_channel text, p_hint jsonb, p_events jsonb)
returns void
language plpgsql as $$
declare
  v_payload text := (p_hint || jsonb_build_object('e', p_events))::text;
begin
  if p_events is null or octet_length(v_payload) > 7900 then
    v_payload := p_hint::text;
  end if;
  perform pg_notify(p_channel, v_payload);
end
$$;

-- ─── a2_append_steps_many ────────────────────────────────────────────────────
-- Consumers' chunk batches, many sessions in one statement. A process streaming 100 answers
-- made ~1,700 single-session commits a second, each taking the NOTIFY queue's lock and a WAL
-- flush in turn; one statement carrying every batch that is waiting commits once for all.
--
-- Per batch, the order the transactional append keeps: the session's row lock first, then
-- the fence (share-locked: the run cannot be settled under us), then admission (each
-- statement of a plpgsql function sees what committed before it, so a cancel that held the
-- session lock before us is seen), then the insert and the NOTIFY. Sessions are locked in
-- id order, so two of these statements never wait on each other in a cycle; a fence is a job
-- of the batch's own session, so no job lock is taken ahead of a later session's lock.
-- 'for no key update' is the lock the transactional append's 'update a2_sessions' takes.
-- One NOTIFY per batch (a per-session hint; Postgres takes its queue lock once per
-- transaction), never one per event.
--
-- A batch may carry the session's cap on events ('m'): steps count against the log's size,
-- and a batch that would take the session past it is refused 'session_full' (its answer ends
-- there: the run's terminal event is not a step and no cap refuses it).
--
-- One row answers each batch: where its events start, or its refusal (o_refused =
-- 'not_found', 'fenced', 'run_cancelled' or 'session_full'), which is that batch's alone: it
-- writes nothing and spends no index; the others go on.
create or replace function a2_append_steps_many(p_batches jsonb, p_channel text)
returns table (o_batch integer, o_refused text, o_start integer, o_created_at timestamptz)
language plpgsql as $$
declare
  b record;
  v_count integer;
  v_start integer;
  v_run text;
  v_index integer;
  v_stopped boolean;
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
    if b.job is not null then
      perform 1 from a2_jobs j
        where j.id = b.job and j.session_id = b.session and j.attempt = b.attempt and j.status in ('ACTIVE', 'CANCELLING')
        for share;
      if not found then
        return query select b.ord, 'fenced'::text, null::integer, null::timestamptz;
        continue;
      end if;
    end if;
    if jsonb_array_length(b.runs) > 0 then
      v_stopped := false;
      for v_run in select jsonb_array_elements_text(b.runs) loop
        select e.index into v_index from a2_events e where e.session_id = b.session and e.id = v_run;
        perform 1 from a2_jobs j
          where j.session_id = b.session and j.event_index = v_index and j.status in ('CANCELLING', 'CANCELLED');
        v_stopped := found;
        exit when v_stopped;
      end loop;
      if v_stopped then
        return query select b.ord, 'run_cancelled'::text, null::integer, null::timestamptz;
        continue;
      end if;
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

`
