CREATE TABLE "spent_tokens" (
	"owner" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"tokens" integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX "spent_tokens_owner_at" ON "spent_tokens" USING btree ("owner","at");