CREATE TABLE "operator_audit" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"operator" text NOT NULL,
	"action" text NOT NULL,
	"job_id" integer NOT NULL,
	"effect_key" text NOT NULL,
	"verdict" jsonb NOT NULL,
	"outcome" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rate_limits" (
	"key" text PRIMARY KEY NOT NULL,
	"points" integer DEFAULT 0 NOT NULL,
	"expire" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "a2_sessions" ADD COLUMN "pushed_bytes" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "operator_audit_job" ON "operator_audit" USING btree ("job_id","at");--> statement-breakpoint
CREATE INDEX "a2_events_finished_at" ON "a2_events" USING btree ("session_id","created_at") WHERE type = 'finished';