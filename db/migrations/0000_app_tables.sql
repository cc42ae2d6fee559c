CREATE TABLE "notes" (
	"idempotency_key" text PRIMARY KEY NOT NULL,
	"owner" text NOT NULL,
	"session_id" text NOT NULL,
	"body" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
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
CREATE INDEX "notes_owner" ON "notes" USING btree ("owner","created_at");--> statement-breakpoint
CREATE INDEX "operator_audit_job" ON "operator_audit" USING btree ("job_id","at");--> statement-breakpoint
-- Written by hand (drizzle-kit knows only db/schema.ts): the app's index on a2's log. Terminal
-- events by time, for the chat's daily token budget (lib/chat/admission.ts); partial, so the
-- insert path of every other event is untouched.
CREATE INDEX "a2_events_finished_at" ON "a2_events" USING btree ("session_id","created_at") WHERE type = 'finished';
