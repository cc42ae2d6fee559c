-- Written by hand (drizzle-kit does not model storage): a file's bytes are kept as they came,
-- out of line and never compressed. The files taken are PNG, JPEG, WebP, GIF and PDF, already
-- compressed, so Postgres's own attempt (pglz, on every insert) only cost time: a 10 MB photo's
-- insert took about twice as long with it (bench/README.md, figure 15).
ALTER TABLE "file_bytes" ALTER COLUMN "bytes" SET STORAGE EXTERNAL;
