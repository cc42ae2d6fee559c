-- a2's hot path, a consumer's chunk batch, in one round trip (see lib/a2/internal/log.ts,
-- appendSteps). The order inside is the order the transactional append keeps: the
-- session's row lock first, then the fence (share-locked: the run cannot be settled under
-- us), then admission (each statement of a plpgsql function sees what committed before it,
-- so a cancel that held the session lock before us is seen), then the insert and the NOTIFY.
-- Refusals raise 'a2:<code>', which rolls the whole statement back: no index is spent.
create or replace function a2_append_steps(
  p_session text,
  p_job bigint,
  p_attempt integer,
  p_runs jsonb,
  p_events jsonb,
  p_channel text
) returns table (o_index integer, o_id text, o_type text, o_payload jsonb, o_created_at timestamptz)
language plpgsql as $$
declare
  v_count integer := jsonb_array_length(p_events);
  v_start integer;
begin
  update a2_sessions s set head = s.head + v_count where s.id = p_session returning s.head - v_count into v_start;
  if v_start is null then
    raise exception 'a2:not_found';
  end if;
  if p_job is not null then
    perform 1 from a2_jobs j
      where j.id = p_job and j.attempt = p_attempt and j.status in ('ACTIVE', 'CANCELLING')
      for share;
    if not found then
      raise exception 'a2:fenced';
    end if;
  end if;
  if jsonb_array_length(p_runs) > 0 then
    perform 1 from a2_jobs j
      where j.session_id = p_session and j.status in ('CANCELLING', 'CANCELLED')
        and j.event_id in (select jsonb_array_elements_text(p_runs));
    if found then
      raise exception 'a2:run_cancelled';
    end if;
  end if;
  return query
    insert into a2_events as e (session_id, index, id, type, payload)
    select p_session, v_start + (o.ord - 1)::integer, o.item ->> 'id', o.item ->> 'type', o.item -> 'payload'
    from jsonb_array_elements(p_events) with ordinality as o(item, ord)
    returning e.index, e.id, e.type, e.payload, e.created_at;
  perform pg_notify(p_channel, json_build_object('s', p_session, 'h', v_start + v_count)::text);
end
$$;
