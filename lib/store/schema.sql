-- The live schema of a fresh database (lib/store/schema-dump.ts). Regenerate: npm run db:dump

create table drizzle.__drizzle_migrations (
  id integer default nextval('drizzle.__drizzle_migrations_id_seq'::regclass) not null,
  hash text not null,
  created_at bigint
);

create table public.a2_checkpoint_pieces (
  session_id text not null,
  fold text not null,
  at_index integer not null,
  piece integer not null,
  body text not null
);

create table public.a2_checkpoints (
  session_id text not null,
  fold text not null,
  at_index integer not null,
  state text not null,
  created_at timestamp with time zone default now() not null,
  pieces integer
);

create table public.a2_effects (
  job_id integer not null,
  key text not null,
  status text not null,
  attempt integer not null,
  cancel_version integer not null,
  result jsonb,
  error jsonb,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  overlap_safe boolean default false not null
);

create table public.a2_events (
  session_id text not null,
  index integer not null,
  id text not null,
  type text not null,
  payload jsonb not null,
  created_at timestamp with time zone default now() not null
);

create table public.a2_job_transitions (
  id bigint default nextval('a2_job_transitions_id_seq'::regclass) not null,
  job_id integer not null,
  attempt integer not null,
  from_status text,
  to_status text not null,
  reason text not null,
  detail jsonb,
  at timestamp with time zone default now() not null
);

create table public.a2_jobs (
  id bigint default nextval('a2_jobs_id_seq'::regclass) not null,
  session_id text not null,
  event_index integer not null,
  event_id text not null,
  consumer text not null,
  lane text,
  status text default 'ACTIVE'::text not null,
  cancel_version integer default 0 not null,
  cancelled_by jsonb,
  attempt integer default 0 not null,
  max_attempts integer not null,
  run_at timestamp with time zone default now() not null,
  owner text,
  owner_key integer,
  lease_until timestamp with time zone,
  cancelling_since timestamp with time zone,
  last_error jsonb,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  lane_blocked boolean default false not null
);

create table public.a2_migrations (
  id integer not null,
  name text not null,
  applied_at timestamp with time zone default now() not null
);

create table public.a2_sessions (
  id text not null,
  owner text not null,
  title text default ''::text not null,
  head integer default 0 not null,
  pushed_bytes bigint default 0 not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null
);

create table public.auth_account (
  id text not null,
  account_id text not null,
  provider_id text not null,
  user_id text not null,
  access_token text,
  refresh_token text,
  id_token text,
  access_token_expires_at timestamp with time zone,
  refresh_token_expires_at timestamp with time zone,
  scope text,
  password text,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null
);

create table public.auth_passkey (
  id text not null,
  name text,
  public_key text not null,
  user_id text not null,
  credential_id text not null,
  counter integer not null,
  device_type text not null,
  backed_up boolean not null,
  transports text,
  created_at timestamp with time zone,
  aaguid text
);

create table public.auth_rate_limit (
  id text not null,
  key text not null,
  count integer not null,
  last_request bigint not null
);

create table public.auth_session (
  id text not null,
  expires_at timestamp with time zone not null,
  token text not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  ip_address text,
  user_agent text,
  user_id text not null
);

create table public.auth_user (
  id text not null,
  name text not null,
  email text not null,
  email_verified boolean default false not null,
  image text,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null
);

create table public.auth_verification (
  id text not null,
  identifier text not null,
  value text not null,
  expires_at timestamp with time zone not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null
);

create table public.file_bytes (
  file_id text not null,
  bytes bytea not null,
  seq integer default 0 not null
);

create table public.files (
  id text not null,
  owner text not null,
  session_id text,
  name text not null,
  media_type text not null,
  size integer not null,
  sha256 text not null,
  storage text not null,
  created_at timestamp with time zone default now() not null,
  thumb bytea
);

create table public.mail_outbox (
  id bigint default nextval('mail_outbox_id_seq'::regclass) not null,
  at timestamp with time zone default now() not null,
  to text not null,
  subject text not null,
  text text not null,
  link text not null
);

create table public.notes (
  idempotency_key text not null,
  owner text not null,
  session_id text not null,
  body text not null,
  created_at timestamp with time zone default now() not null
);

create table public.operator_audit (
  id bigint default nextval('operator_audit_id_seq'::regclass) not null,
  at timestamp with time zone default now() not null,
  operator text not null,
  action text not null,
  job_id integer not null,
  effect_key text not null,
  verdict jsonb not null,
  outcome text not null
);

create table public.rate_limits (
  key text not null,
  points integer default 0 not null,
  expire timestamp with time zone
);

create table public.share_links (
  token_hash text not null,
  session_id text not null,
  owner text not null,
  created_at timestamp with time zone default now() not null,
  revoked_at timestamp with time zone
);

create table public.spent_tokens (
  owner text not null,
  at timestamp with time zone not null,
  tokens integer not null
);

alter table drizzle.__drizzle_migrations add constraint __drizzle_migrations_pkey PRIMARY KEY (id);
alter table public.a2_checkpoint_pieces add constraint a2_checkpoint_pieces_checkpoint_fk FOREIGN KEY (session_id, fold, at_index) REFERENCES a2_checkpoints(session_id, fold, at_index) ON DELETE CASCADE;
alter table public.a2_checkpoint_pieces add constraint a2_checkpoint_pieces_session_id_fold_at_index_piece_pk PRIMARY KEY (session_id, fold, at_index, piece);
alter table public.a2_checkpoints add constraint a2_checkpoints_session_id_a2_sessions_id_fk FOREIGN KEY (session_id) REFERENCES a2_sessions(id) ON DELETE CASCADE;
alter table public.a2_checkpoints add constraint a2_checkpoints_session_id_fold_at_index_pk PRIMARY KEY (session_id, fold, at_index);
alter table public.a2_effects add constraint a2_effects_job_id_key_pk PRIMARY KEY (job_id, key);
alter table public.a2_events add constraint a2_events_session_id_a2_sessions_id_fk FOREIGN KEY (session_id) REFERENCES a2_sessions(id) ON DELETE CASCADE;
alter table public.a2_events add constraint a2_events_session_id_index_pk PRIMARY KEY (session_id, index);
alter table public.a2_job_transitions add constraint a2_job_transitions_pkey PRIMARY KEY (id);
alter table public.a2_jobs add constraint a2_jobs_pkey PRIMARY KEY (id);
alter table public.a2_jobs add constraint a2_jobs_session_id_a2_sessions_id_fk FOREIGN KEY (session_id) REFERENCES a2_sessions(id) ON DELETE CASCADE;
alter table public.a2_migrations add constraint a2_migrations_pkey PRIMARY KEY (id);
alter table public.a2_sessions add constraint a2_sessions_pkey PRIMARY KEY (id);
alter table public.auth_account add constraint auth_account_pkey PRIMARY KEY (id);
alter table public.auth_account add constraint auth_account_user_id_auth_user_id_fk FOREIGN KEY (user_id) REFERENCES auth_user(id) ON DELETE CASCADE;
alter table public.auth_passkey add constraint auth_passkey_pkey PRIMARY KEY (id);
alter table public.auth_passkey add constraint auth_passkey_user_id_auth_user_id_fk FOREIGN KEY (user_id) REFERENCES auth_user(id) ON DELETE CASCADE;
alter table public.auth_rate_limit add constraint auth_rate_limit_key_unique UNIQUE (key);
alter table public.auth_rate_limit add constraint auth_rate_limit_pkey PRIMARY KEY (id);
alter table public.auth_session add constraint auth_session_pkey PRIMARY KEY (id);
alter table public.auth_session add constraint auth_session_token_unique UNIQUE (token);
alter table public.auth_session add constraint auth_session_user_id_auth_user_id_fk FOREIGN KEY (user_id) REFERENCES auth_user(id) ON DELETE CASCADE;
alter table public.auth_user add constraint auth_user_email_unique UNIQUE (email);
alter table public.auth_user add constraint auth_user_pkey PRIMARY KEY (id);
alter table public.auth_verification add constraint auth_verification_pkey PRIMARY KEY (id);
alter table public.file_bytes add constraint file_bytes_file_id_files_id_fk FOREIGN KEY (file_id) REFERENCES files(id) ON DELETE CASCADE;
alter table public.file_bytes add constraint file_bytes_file_id_seq_pk PRIMARY KEY (file_id, seq);
alter table public.files add constraint files_pkey PRIMARY KEY (id);
alter table public.mail_outbox add constraint mail_outbox_pkey PRIMARY KEY (id);
alter table public.notes add constraint notes_pkey PRIMARY KEY (idempotency_key);
alter table public.operator_audit add constraint operator_audit_pkey PRIMARY KEY (id);
alter table public.rate_limits add constraint rate_limits_pkey PRIMARY KEY (key);
alter table public.share_links add constraint share_links_pkey PRIMARY KEY (token_hash);

CREATE INDEX a2_events_approval_expiry ON public.a2_events USING btree (((((payload -> 'approval'::text) ->> 'expiresAt'::text))::bigint)) WHERE ((type = 'tool.state'::text) AND ((payload ->> 'state'::text) = 'awaiting-approval'::text));
CREATE UNIQUE INDEX a2_events_session_id ON public.a2_events USING btree (session_id, id);
CREATE INDEX a2_events_spent_at ON public.a2_events USING btree (session_id, created_at) WHERE ((type = 'finished'::text) OR ((type = 'tool.state'::text) AND (payload ? 'usage'::text)));
CREATE INDEX a2_job_transitions_job ON public.a2_job_transitions USING btree (job_id, id);
CREATE INDEX a2_jobs_cancelling ON public.a2_jobs USING btree (cancelling_since) WHERE (status = 'CANCELLING'::text);
CREATE INDEX a2_jobs_claimable ON public.a2_jobs USING btree (GREATEST(run_at, COALESCE(lease_until, '-infinity'::timestamp with time zone)), id) WHERE ((status = 'ACTIVE'::text) AND (NOT lane_blocked));
CREATE UNIQUE INDEX a2_jobs_event_consumer ON public.a2_jobs USING btree (session_id, event_index, consumer);
CREATE INDEX a2_jobs_exhausted ON public.a2_jobs USING btree (id) WHERE ((status = 'ACTIVE'::text) AND (attempt >= max_attempts));
CREATE INDEX a2_jobs_owned ON public.a2_jobs USING btree (owner_key) WHERE (owner_key IS NOT NULL);
CREATE INDEX a2_jobs_session_open ON public.a2_jobs USING btree (session_id, consumer) WHERE (status = ANY (ARRAY['ACTIVE'::text, 'CANCELLING'::text, 'UNKNOWN'::text]));
CREATE INDEX a2_jobs_updated ON public.a2_jobs USING btree (updated_at);
CREATE INDEX a2_sessions_owner_updated ON public.a2_sessions USING btree (owner, updated_at);
CREATE INDEX auth_account_user ON public.auth_account USING btree (user_id);
CREATE INDEX auth_passkey_credential ON public.auth_passkey USING btree (credential_id);
CREATE INDEX auth_passkey_user ON public.auth_passkey USING btree (user_id);
CREATE INDEX auth_session_user ON public.auth_session USING btree (user_id);
CREATE INDEX auth_verification_identifier ON public.auth_verification USING btree (identifier);
CREATE INDEX files_owner ON public.files USING btree (owner);
CREATE INDEX files_session ON public.files USING btree (session_id);
CREATE INDEX files_unreferenced ON public.files USING btree (created_at) WHERE (session_id IS NULL);
CREATE INDEX mail_outbox_to ON public.mail_outbox USING btree ("to", at);
CREATE INDEX notes_owner ON public.notes USING btree (owner, created_at);
CREATE INDEX operator_audit_job ON public.operator_audit USING btree (job_id, at);
CREATE UNIQUE INDEX share_links_live ON public.share_links USING btree (session_id) WHERE (revoked_at IS NULL);
CREATE INDEX spent_tokens_owner_at ON public.spent_tokens USING btree (owner, at);

create sequence drizzle.__drizzle_migrations_id_seq;
create sequence public.a2_job_transitions_id_seq;
create sequence public.a2_jobs_id_seq;
create sequence public.mail_outbox_id_seq;
create sequence public.operator_audit_id_seq;

CREATE OR REPLACE FUNCTION public.a2_admit(p_session text, p_owner text, p_count integer, p_client_ids jsonb, p_bytes bigint, p_max_events integer, p_max_bytes bigint, p_cancels jsonb, p_fence_job bigint, p_fence_attempt integer, p_step_runs jsonb, p_step_cap integer)
 RETURNS TABLE(o_refused text, o_head integer, o_existing jsonb)
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.a2_announce_steps(p_batches jsonb, p_channel text, p_origin text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.a2_append_steps_many(p_batches jsonb)
 RETURNS TABLE(o_batch integer, o_refused text, o_start integer, o_created_at timestamp with time zone)
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.a2_lane_advance()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  next_id bigint;
BEGIN
  -- The lane's first open job now. A candidate closed meanwhile (a waiting job cancelled
  -- and settled) is rechecked after its lock is granted and skipped for the one after it.
  SELECT id INTO next_id FROM a2_jobs
  WHERE session_id = OLD.session_id AND consumer = OLD.consumer AND lane = OLD.lane
    AND status IN ('ACTIVE', 'CANCELLING', 'UNKNOWN')
  ORDER BY id
  LIMIT 1
  FOR NO KEY UPDATE;
  IF FOUND THEN
    UPDATE a2_jobs SET lane_blocked = false WHERE id = next_id AND lane_blocked;
  END IF;
  RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.a2_lane_enqueue()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM 1 FROM a2_jobs
  WHERE session_id = NEW.session_id AND consumer = NEW.consumer AND lane = NEW.lane
    AND event_index < NEW.event_index AND status IN ('ACTIVE', 'CANCELLING', 'UNKNOWN')
  ORDER BY id
  FOR SHARE;
  NEW.lane_blocked := FOUND;
  RETURN NEW;
END
$function$;

CREATE OR REPLACE FUNCTION public.a2_notify(p_channel text, p_hint jsonb, p_events jsonb)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v_payload text := (p_hint || jsonb_build_object('e', p_events))::text;
begin
  if p_events is null or octet_length(v_payload) > 7900 then
    v_payload := p_hint::text;
  end if;
  perform pg_notify(p_channel, v_payload);
end
$function$;

CREATE OR REPLACE FUNCTION public.a2_push(p_session text, p_owner text, p_events jsonb, p_client_ids jsonb, p_bytes bigint, p_max_events integer, p_max_bytes bigint, p_jobs jsonb, p_cancels jsonb, p_fence_job bigint, p_fence_attempt integer, p_step_runs jsonb, p_step_cap integer, p_channel text, p_max_cancels_per_hint integer)
 RETURNS TABLE(o_refused text, o_start integer, o_created_at timestamp with time zone, o_existing jsonb, o_cancels jsonb)
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.a2_step_refusal(p_session text, p_job bigint, p_attempt integer, p_runs jsonb)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.a2_write(p_session text, p_owner text, p_head integer, p_events jsonb, p_bytes bigint, p_jobs jsonb, p_cancels jsonb, p_channel text, p_max_cancels_per_hint integer)
 RETURNS TABLE(o_start integer, o_created_at timestamp with time zone, o_cancels jsonb)
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE TRIGGER a2_jobs_lane_advance AFTER UPDATE OF status ON public.a2_jobs FOR EACH ROW WHEN (((old.lane IS NOT NULL) AND (NOT old.lane_blocked) AND (old.status = ANY (ARRAY['ACTIVE'::text, 'CANCELLING'::text, 'UNKNOWN'::text])) AND (new.status <> ALL (ARRAY['ACTIVE'::text, 'CANCELLING'::text, 'UNKNOWN'::text])))) EXECUTE FUNCTION a2_lane_advance();
CREATE TRIGGER a2_jobs_lane_enqueue BEFORE INSERT ON public.a2_jobs FOR EACH ROW WHEN ((new.lane IS NOT NULL)) EXECUTE FUNCTION a2_lane_enqueue();
