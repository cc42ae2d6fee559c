CREATE TABLE "file_bytes" (
	"file_id" text PRIMARY KEY NOT NULL,
	"bytes" "bytea" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "files" (
	"id" text PRIMARY KEY NOT NULL,
	"owner" text NOT NULL,
	"session_id" text,
	"name" text NOT NULL,
	"media_type" text NOT NULL,
	"size" integer NOT NULL,
	"sha256" text NOT NULL,
	"storage" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "file_bytes" ADD CONSTRAINT "file_bytes_file_id_files_id_fk" FOREIGN KEY ("file_id") REFERENCES "public"."files"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "files_owner" ON "files" USING btree ("owner");--> statement-breakpoint
CREATE INDEX "files_session" ON "files" USING btree ("session_id");--> statement-breakpoint
CREATE INDEX "files_unreferenced" ON "files" USING btree ("created_at") WHERE session_id is null;