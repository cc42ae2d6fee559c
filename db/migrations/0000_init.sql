CREATE TABLE "a2_effects" (
	"job_id" integer NOT NULL,
	"key" text NOT NULL,
	"status" text NOT NULL,
	"attempt" integer NOT NULL,
	"cancel_version" integer NOT NULL,
	"result" jsonb,
	"error" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "a2_effects_job_id_key_pk" PRIMARY KEY("job_id","key")
);
--> statement-breakpoint
CREATE TABLE "a2_events" (
	"session_id" text NOT NULL,
	"index" integer NOT NULL,
	"id" text NOT NULL,
	"type" text NOT NULL,
	"payload" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "a2_events_session_id_index_pk" PRIMARY KEY("session_id","index")
);
--> statement-breakpoint
CREATE TABLE "a2_job_transitions" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"job_id" integer NOT NULL,
	"attempt" integer NOT NULL,
	"from_status" text,
	"to_status" text NOT NULL,
	"reason" text NOT NULL,
	"detail" jsonb,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "a2_jobs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"event_index" integer NOT NULL,
	"event_id" text NOT NULL,
	"consumer" text NOT NULL,
	"lane" text,
	"status" text DEFAULT 'ACTIVE' NOT NULL,
	"cancel_version" integer DEFAULT 0 NOT NULL,
	"cancelled_by" jsonb,
	"attempt" integer DEFAULT 0 NOT NULL,
	"max_attempts" integer NOT NULL,
	"run_at" timestamp with time zone DEFAULT now() NOT NULL,
	"owner" text,
	"lease_until" timestamp with time zone,
	"cancelling_since" timestamp with time zone,
	"last_error" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "notes" (
	"idempotency_key" text PRIMARY KEY NOT NULL,
	"owner" text NOT NULL,
	"session_id" text NOT NULL,
	"body" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "a2_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"owner" text NOT NULL,
	"title" text DEFAULT '' NOT NULL,
	"head" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "a2_events" ADD CONSTRAINT "a2_events_session_id_a2_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."a2_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "a2_jobs" ADD CONSTRAINT "a2_jobs_session_id_a2_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."a2_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "a2_events_session_id" ON "a2_events" USING btree ("session_id","id");--> statement-breakpoint
CREATE INDEX "a2_job_transitions_job" ON "a2_job_transitions" USING btree ("job_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "a2_jobs_event_consumer" ON "a2_jobs" USING btree ("session_id","event_index","consumer");--> statement-breakpoint
CREATE INDEX "a2_jobs_runnable" ON "a2_jobs" USING btree ("run_at") WHERE status = 'ACTIVE';--> statement-breakpoint
CREATE INDEX "a2_jobs_session_open" ON "a2_jobs" USING btree ("session_id","consumer") WHERE status in ('ACTIVE', 'CANCELLING');--> statement-breakpoint
CREATE INDEX "a2_jobs_cancelling" ON "a2_jobs" USING btree ("cancelling_since") WHERE status = 'CANCELLING';--> statement-breakpoint
CREATE INDEX "a2_jobs_updated" ON "a2_jobs" USING btree ("updated_at");--> statement-breakpoint
CREATE INDEX "notes_owner" ON "notes" USING btree ("owner","created_at");--> statement-breakpoint
CREATE INDEX "a2_sessions_owner_updated" ON "a2_sessions" USING btree ("owner","updated_at");