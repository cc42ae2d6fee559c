DROP INDEX "a2_jobs_session_open";--> statement-breakpoint
ALTER TABLE "a2_jobs" ADD COLUMN "owner_key" integer;--> statement-breakpoint
CREATE INDEX "a2_jobs_owned" ON "a2_jobs" USING btree ("owner_key") WHERE owner_key is not null;--> statement-breakpoint
CREATE INDEX "a2_jobs_session_open" ON "a2_jobs" USING btree ("session_id","consumer") WHERE status in ('ACTIVE', 'CANCELLING', 'UNKNOWN');