/**
 * Migration 0012: a2_notify and a2_append_steps_many as 0002 created them, with a batch's
 * admission check finding its runs by key. It looked them up as `j.event_id in (…)` among the
 * session's stopped runs, and no index leads with (session_id, event_id): every chunk batch
 * read every run of its session, 1,000 rows a batch in a session of 1,000 answers
 * (../session-length.test.ts). Now each run's event is found by (session_id, id) and its job by
 * (session_id, event_index), one equality each, which every plan takes as its index condition
 * (an `= any(…)` over the same keys was left out of it when the statistics were stale, and
 * the session scanned again). A job's event_id is the id of the event at its event_index, in
 * its session, so the check is the same. 0002 is shipped and stays as it was; this is its
 * text with that check changed (`create or replace` keeps both functions).
 */
import appendFunctions from './0002_append_functions'

const CHANGES: Array<[from: string, to: string]> = [
  [
    `  v_start integer;
begin`,
    `  v_start integer;
  v_run text;
  v_index integer;
  v_stopped boolean;
begin`,
  ],
  [
    `      perform 1 from a2_jobs j
        where j.session_id = b.session and j.status in ('CANCELLING', 'CANCELLED')
          and j.event_id in (select jsonb_array_elements_text(b.runs));
      if found then`,
    `      v_stopped := false;
      for v_run in select jsonb_array_elements_text(b.runs) loop
        select e.index into v_index from a2_events e where e.session_id = b.session and e.id = v_run;
        perform 1 from a2_jobs j
          where j.session_id = b.session and j.event_index = v_index and j.status in ('CANCELLING', 'CANCELLED');
        v_stopped := found;
        exit when v_stopped;
      end loop;
      if v_stopped then`,
  ],
]

export default CHANGES.reduce((sql, [from, to]) => {
  if (sql.split(from).length !== 2) throw new Error(`0012: 0002 no longer holds what it changes: ${from.trim().split('\n')[0]}`)
  return sql.replace(from, to)
}, appendFunctions)
