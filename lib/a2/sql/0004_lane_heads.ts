/**
 * Migration 0004: lane heads (../internal/runtime/jobs.ts claims only jobs whose lane is free).
 * The status lists are literals (see 0002); migrate.test.ts checks them against OPEN_STATUSES.
 */
export default /* sql */ `
-- Lane heads: only the first open job of a lane is claimable.
--
-- A laned job waits (lane_blocked) while an earlier job of its (session, consumer, lane) is
-- open (ACTIVE, CANCELLING, UNKNOWN). The claim then reads one partial index of claimable
-- jobs instead of probing every waiting job's lane on every claim (bench, 10k stuck lanes:
-- 377 jobs/s, 0.07x a bare SKIP LOCKED loop). Two triggers keep the flag in the transaction
-- that changes a lane, on every path (append, endRuns, resolveUnknownRun, or a bulk insert):
--   - on insert, a laned job is blocked when an earlier job of its lane is open;
--   - when a lane's head leaves the open statuses, the lane's next open job is unblocked.
-- A blocked job never runs, and only the head's close moves the head (a waiting job that is
-- cancelled and settled leaves the head where it is). The flag goes from true to false once,
-- and means nothing once a job is settled (a waiting job cancelled keeps it).
--
-- Lock order, everywhere: the session's row, then job rows in id order (within a session, id
-- order is log order). The insert trigger share-locks its lane's open jobs in id order (so a
-- head closing right now is waited for, and its close then sees this job); the close trigger
-- holds the head and locks the next job (a later id). Each trigger statement sees what
-- committed before it (a VOLATILE plpgsql function takes a new snapshot per statement), so a
-- close that waited for an append sees the job that append inserted.
ALTER TABLE "a2_jobs" ADD COLUMN "lane_blocked" boolean DEFAULT false NOT NULL;
UPDATE "a2_jobs" j SET "lane_blocked" = true
WHERE j.lane IS NOT NULL AND j.status IN ('ACTIVE', 'CANCELLING', 'UNKNOWN')
  AND EXISTS (
    SELECT 1 FROM "a2_jobs" e
    WHERE e.session_id = j.session_id AND e.consumer = j.consumer AND e.lane = j.lane
      AND e.event_index < j.event_index AND e.status IN ('ACTIVE', 'CANCELLING', 'UNKNOWN'));
CREATE OR REPLACE FUNCTION a2_lane_enqueue() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM a2_jobs
  WHERE session_id = NEW.session_id AND consumer = NEW.consumer AND lane = NEW.lane
    AND event_index < NEW.event_index AND status IN ('ACTIVE', 'CANCELLING', 'UNKNOWN')
  ORDER BY id
  FOR SHARE;
  NEW.lane_blocked := FOUND;
  RETURN NEW;
END
$$;
CREATE OR REPLACE FUNCTION a2_lane_advance() RETURNS trigger
LANGUAGE plpgsql AS $$
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
$$;
CREATE TRIGGER a2_jobs_lane_enqueue BEFORE INSERT ON a2_jobs
FOR EACH ROW WHEN (NEW.lane IS NOT NULL) EXECUTE FUNCTION a2_lane_enqueue();
CREATE TRIGGER a2_jobs_lane_advance AFTER UPDATE OF status ON a2_jobs
FOR EACH ROW WHEN (
  OLD.lane IS NOT NULL AND NOT OLD.lane_blocked
  AND OLD.status IN ('ACTIVE', 'CANCELLING', 'UNKNOWN') AND NEW.status NOT IN ('ACTIVE', 'CANCELLING', 'UNKNOWN')
) EXECUTE FUNCTION a2_lane_advance();
-- The claim's index: claimable jobs by when they are next free, the later of run_at and a
-- lease's end. A running job sorts at its lease's end, so the claim's range scan up to now()
-- never walks a leased job (the bench's 10k stuck lanes are 10k heads leased for an hour).
DROP INDEX "a2_jobs_runnable";
CREATE INDEX "a2_jobs_claimable" ON "a2_jobs" USING btree (greatest("run_at", coalesce("lease_until", '-infinity'::timestamptz)), "id")
WHERE status = 'ACTIVE' AND NOT lane_blocked;

-- The drain's runs out of attempts (drain.ts, takeExhausted) read a2_jobs_runnable before: a
-- partial index of just those, usually empty, keeps that off a scan of every job ever run.
CREATE INDEX "a2_jobs_exhausted" ON "a2_jobs" USING btree ("id") WHERE status = 'ACTIVE' AND attempt >= max_attempts;
`
