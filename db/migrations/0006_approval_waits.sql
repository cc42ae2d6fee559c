-- Written by hand (drizzle-kit knows only db/schema.ts): the app's index on a2's log. Tool calls
-- waiting for the user's approval, by when they expire, for the sweep that lets them expire as
-- denied (lib/chat/answer/approval-expiry.ts); partial, so only waits are in it and the insert
-- path of every other event is untouched.
CREATE INDEX "a2_events_approval_expiry" ON "a2_events" USING btree ((("payload"->'approval'->>'expiresAt')::bigint)) WHERE type = 'tool.state' AND "payload"->>'state' = 'awaiting-approval';
