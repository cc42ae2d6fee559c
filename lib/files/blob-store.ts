/**
 * Where a file's bytes live. Two back ends behind one shape: the database the app already has
 * (`file_bytes`, the default: PGlite in dev, Postgres when DATABASE_URL is set, so every
 * instance sees the bytes with nothing new to run), or an S3-compatible bucket (s3-store.ts).
 * A file's row records which one holds it, so changing the setting strands nothing.
 */
import { sql } from 'drizzle-orm'
import type { Executor } from '@/lib/a2/server'
import { rowsOf } from '@/lib/store/rows'

export type StorageKind = 'db' | 's3'

export interface BlobStore {
  readonly kind: StorageKind
  /** Keeps the bytes of file `id`; `tx` is the transaction that inserts its row (the database back end writes in it). */
  put(tx: Executor, id: string, bytes: Uint8Array): Promise<void>
  get(db: Executor, id: string): Promise<Uint8Array | undefined>
  /** Removes the bytes of these files (ids that hold nothing are fine). */
  delete(db: Executor, ids: readonly string[]): Promise<void>
  /** Every id that holds bytes (the tests' "no byte remains" check). */
  list(db: Executor): Promise<string[]>
  /**
   * Starts storing file `id`'s `size` bytes while they arrive, so the write ends with the body
   * (a back end outside the database's transaction only; the database's go in with the row, at `put`).
   */
  open?(id: string, size: number): BlobWriter
}

export interface BlobWriter {
  write(chunk: Uint8Array): void
  /** Resolves once every byte is stored. */
  done(): Promise<void>
  /** Stops the write and removes whatever of it was stored. */
  abort(): Promise<void>
}

export { rowsOf }

/**
 * In parts of PART_BYTES, in the upload's transaction. Sent as one value, 10 MB cost postgres-js a
 * 20 MB hex string and Postgres one 20 MB message to parse: 578 ms against 323 ms for the same
 * bytes in ten 1 MiB statements (raw, load 5; bench/README.md, figure 15).
 */
const PART_BYTES = 1024 * 1024

export const databaseBlobs: BlobStore = {
  kind: 'db',
  async put(tx, id, bytes) {
    for (let seq = 0; seq * PART_BYTES < bytes.byteLength; seq++) {
      const part = bytes.subarray(seq * PART_BYTES, (seq + 1) * PART_BYTES)
      await tx.execute(
        sql`insert into file_bytes (file_id, seq, bytes) values (${id}, ${seq}, ${Buffer.from(part.buffer, part.byteOffset, part.byteLength)})`,
      )
    }
  },
  async get(db, id) {
    const parts = rowsOf<{ bytes: Uint8Array }>(await db.execute(sql`select bytes from file_bytes where file_id = ${id} order by seq`))
    return parts.length > 0 ? new Uint8Array(Buffer.concat(parts.map((part) => part.bytes))) : undefined
  },
  async delete(db, ids) {
    if (ids.length === 0) return
    await db.execute(sql`delete from file_bytes where file_id in ${ids}`)
  },
  async list(db) {
    return rowsOf<{ file_id: string }>(await db.execute(sql`select distinct file_id from file_bytes`)).map((r) => r.file_id)
  },
}
