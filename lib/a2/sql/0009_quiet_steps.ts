/**
 * Migration 0009: a chunk batch's commit notifies no one. `a2_append_steps_many` loses its
 * channel and its NOTIFYs: Postgres takes one cluster-wide lock at the commit of every
 * transaction with a pending notification and holds it through the commit's WAL flush, so
 * every chunk commit of every answer queued with every other notifying commit, a Stop's
 * `a2_push` among them. The batch is announced after its commit (../internal/log/step-hints.ts):
 * to the committing process's own tails in-process, and to other processes by
 * `a2_announce_steps`, a statement of its own sent right behind the step statement on the same
 * connection (pipelined: Postgres runs it once the step statement has committed, without waiting
 * for the client), which reads the batches' events back by id, packs many sessions' hints to a
 * notification and commits without waiting for its WAL flush, so it holds the notify lock for
 * the queue insert only and no data lock at all (PROTOCOL.md §10).
 *
 * Otherwise as 0008 made it: 0002's comment says why one statement carries many sessions'
 * batches, and the fence and admission are a2_step_refusal's.
 */
export default /* sql */ `
drop function a2_append_steps_many(jsonb, text);

-- ─── a2_append_steps_many ────────────────────────────────────────────────────
create function a2_append_steps_many(p_batches jsonb)
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
    -- now(), the transaction's start, so one value states it for every event.
    return query select b.ord, null::text, v_start, now();
  end loop;
end
$$;

-- ─── a2_announce_steps ───────────────────────────────────────────────────────
-- The hints of a step statement that has committed (its batches, as a2_append_steps_many took
-- them): per session, its new head and the events, found again by (session_id, id), one
-- equality each; a refused batch wrote none and is not announced. Packed as
-- {"o": origin, "m": [hint, …]}, each payload under NOTIFY's 8,000 bytes (7,900 with the
-- channel's framing); a hint carries its events when it fits in a payload alone, else its head
-- only (tails read). synchronous_commit is off for this transaction alone: a hint lost in a
-- crash costs a poll, the data it announces is already durable.
create function a2_announce_steps(p_batches jsonb, p_channel text, p_origin text)
returns void
language plpgsql as $$
declare
  h record;
  v_open text := '{"o":' || to_json(p_origin)::text || ',"m":[';
  v_parts text := '';
  v_hint text;
begin
  perform set_config('synchronous_commit', 'off', true);
  for h in
    select e.session_id as session, max(e.index) + 1 as head,
           json_agg(json_build_object('i', e.index, 'd', e.id, 't', e.type, 'p', e.payload, 'c', e.created_at)
                    order by e.index) as events
    from jsonb_array_elements(p_batches) as b(item)
    cross join lateral jsonb_array_elements(b.item -> 'e') as x(event)
    join a2_events e on e.session_id = b.item ->> 's' and e.id = x.event ->> 'id'
    group by e.session_id
    order by e.session_id
  loop
    v_hint := json_build_object('s', h.session, 'h', h.head, 'e', h.events)::text;
    if octet_length(v_open) + octet_length(v_hint) + 2 > 7900 then
      v_hint := json_build_object('s', h.session, 'h', h.head)::text;
    end if;
    if v_parts <> '' and octet_length(v_open) + octet_length(v_parts) + octet_length(v_hint) + 3 > 7900 then
      perform pg_notify(p_channel, v_open || v_parts || ']}');
      v_parts := '';
    end if;
    v_parts := case when v_parts = '' then v_hint else v_parts || ',' || v_hint end;
  end loop;
  if v_parts <> '' then
    perform pg_notify(p_channel, v_open || v_parts || ']}');
  end if;
end
$$;
`
