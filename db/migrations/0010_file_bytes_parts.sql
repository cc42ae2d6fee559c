-- A file's bytes in parts of at most 1 MiB (lib/files/blob-store.ts): one 10 MB value cost more
-- to send than ten of them. A file stored before is its one part 0.
ALTER TABLE "file_bytes" ADD COLUMN "seq" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "file_bytes" DROP CONSTRAINT "file_bytes_pkey";--> statement-breakpoint
ALTER TABLE "file_bytes" ADD CONSTRAINT "file_bytes_file_id_seq_pk" PRIMARY KEY("file_id","seq");
