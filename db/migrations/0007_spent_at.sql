-- Written by hand (drizzle-kit knows only db/schema.ts): the app's index on a2's log for the daily
-- token budget (lib/chat/server/token-budget.ts), which now also counts the model call that made
-- an approval wait (its first `awaiting-approval` carries the call's `usage`: it writes no
-- `finished`). Same keys, its predicate the budget query's own, so the planner proves it usable;
-- partial, so the insert path of every other event is untouched.
DROP INDEX IF EXISTS "a2_events_finished_at";--> statement-breakpoint
CREATE INDEX "a2_events_spent_at" ON "a2_events" USING btree ("session_id","created_at") WHERE (type = 'finished' OR (type = 'tool.state' AND "payload" ? 'usage'));
