/**
 * Migration 0009: a chunk batch's commit notifies no one. `a2_append_steps_many` loses its
 * channel and its NOTIFYs: Postgres takes one cluster-wide lock at the commit of every
 * transaction with a pending notification and holds it through the commit's WAL flush, so
 * every chunk commit of every answer queued with every other notifying commit, a Stop's
 * `a2_push` among them. The process that committed the batch now announces it after the
 * commit (../internal/log/step-hints.ts): to its own tails in-process, and to other processes
 * in one notifying transaction of its own per group commit, which holds no data lock and
 * flushes no WAL before it lets the lock go (PROTOCOL.md §10).
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
`
