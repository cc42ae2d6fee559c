/**
 * Migration 0011: a2_push as 0006 created it, with its duplicate check looking the client's ids
 * up by key. `e.id in (select jsonb_array_elements_text(p_client_ids))` is a semi-join whose
 * plan, once plpgsql caches a generic one (after five calls), read every event of the session:
 * 16–24 ms a push at 100k events until the next analyze. `= any(array(…))` is answered from
 * the (session_id, id) index by any plan (../session-length.test.ts: two pushes into a 20k-event
 * session read 40,001 rows before, fewer than 20 after). 0006 is shipped and stays as it was;
 * this is its text with that one condition changed (`create or replace` keeps the function).
 */
import push from './0006_push_function'

const BY_SEMI_JOIN = 'e.id in (select jsonb_array_elements_text(p_client_ids))'
const BY_KEY = 'e.id = any(array(select jsonb_array_elements_text(p_client_ids)))'

if (push.split(BY_SEMI_JOIN).length !== 2) throw new Error('0011: 0006 no longer holds the one duplicate check it changes')

export default push.replace(BY_SEMI_JOIN, BY_KEY)
