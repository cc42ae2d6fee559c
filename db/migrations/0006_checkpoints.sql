CREATE TABLE "a2_checkpoints" (
	"session_id" text NOT NULL,
	"fold" text NOT NULL,
	"at_index" integer NOT NULL,
	"state" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "a2_checkpoints_session_id_fold_at_index_pk" PRIMARY KEY("session_id","fold","at_index")
);
--> statement-breakpoint
ALTER TABLE "a2_checkpoints" ADD CONSTRAINT "a2_checkpoints_session_id_a2_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."a2_sessions"("id") ON DELETE cascade ON UPDATE no action;