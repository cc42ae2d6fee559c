/**
 * Attached files: upload (checked whole before anything is stored), who may read one, binding
 * to the chat whose message names it, and deletion with the chat, the account, or by the sweep
 * of uploads no message ever named. Bytes go to a BlobStore (blob-store.ts); the rows are the
 * app's `files` table, in the database the chat log lives in.
 */
import { createHash, randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { Db } from '@/lib/a2/server'
import { rowsOf, type BlobStore, type StorageKind } from './blob-store'
import { checkFileName } from './names'
import { FileRefused } from './refused'
import { isImage, sniffMediaType } from './sniff'
import { thumbnailOf } from './thumbnail'

/** What a message's event names of a file (the log's reference: never bytes). */
export interface FileRef {
  id: string
  name: string
  mediaType: string
  size: number
  sha256: string
}

export interface StoredFile extends FileRef {
  owner: string
  sessionId: string | null
  storage: StorageKind
}

export interface FileLimits {
  maxFileBytes: number
  maxFilesPerMessage: number
  maxMessageBytes: number
  /** An account's. */
  quotaBytesPerUser: number
  /** A guest's (no account yet): smaller, since a guest costs nothing to make. */
  quotaBytesPerGuest: number
}

/** The owners' advisory lock class: an upload's quota check and insert hold it, so two uploads cannot both pass. */
const QUOTA_LOCK_CLASS = 0x6166 // "af"

export type Files = ReturnType<typeof createFiles>

/**
 * `blobs` is where new uploads go; `blobsOf` finds the store a row names (both, when the
 * deployment moved to S3 with files still in the database).
 */
export function createFiles(options: {
  db: Db
  blobs: BlobStore
  limits: FileLimits
  blobsOf?: (kind: StorageKind) => BlobStore | undefined
  /** What makes a thumbnail (the tests count and hold it). */
  makeThumbnail?: typeof thumbnailOf
}) {
  const { db, blobs, limits } = options
  const thumbnails = thumbnailMaker(db, options.makeThumbnail ?? thumbnailOf)
  const blobsOf = options.blobsOf ?? ((kind: StorageKind) => (kind === blobs.kind ? blobs : undefined))

  async function select(where: ReturnType<typeof sql>): Promise<StoredFile[]> {
    const rows = rowsOf<{
      id: string
      owner: string
      session_id: string | null
      name: string
      media_type: string
      size: number
      sha256: string
      storage: StorageKind
    }>(await db.execute(sql`select id, owner, session_id, name, media_type, size, sha256, storage from files where ${where}`))
    return rows.map((r) => ({
      id: r.id,
      owner: r.owner,
      sessionId: r.session_id,
      name: r.name,
      mediaType: r.media_type,
      size: Number(r.size),
      sha256: r.sha256,
      storage: r.storage,
    }))
  }

  /** Removes rows and bytes (the bytes first: a row whose bytes are gone reads as missing, never the other way round). */
  async function remove(found: StoredFile[]): Promise<number> {
    if (found.length === 0) return 0
    for (const kind of new Set(found.map((f) => f.storage))) {
      const store = blobsOf(kind)
      if (store)
        await store.delete(
          db,
          found.filter((f) => f.storage === kind).map((f) => f.id),
        )
    }
    await db.execute(sql`delete from files where id in ${found.map((f) => f.id)}`)
    return found.length
  }

  return {
    limits,

    /**
     * Stores an upload as its body arrives: `read` reads the body, handing each chunk to `write`
     * as it comes (hashed then; an S3 back end stores it then too), and returns the whole bytes,
     * which are checked before anything is kept: the name, the size (and the declared size
     * matched), the type sniffed, the quota held under the owner's lock. Any refusal (FileRefused),
     * or a body that fails to arrive, leaves nothing stored. An image's thumbnail is made after,
     * off the upload's path (thumbOf).
     */
    async receive(
      owner: string,
      rawName: string,
      read: (write: (chunk: Uint8Array) => void) => Promise<Uint8Array>,
      { guest = false, declaredBytes }: { guest?: boolean; declaredBytes?: number } = {},
    ): Promise<FileRef> {
      const quota = guest ? limits.quotaBytesPerGuest : limits.quotaBytesPerUser
      const name = checkFileName(rawName)
      const id = randomUUID()
      const hash = createHash('sha256')
      const early = declaredBytes && blobs.open ? blobs.open(id, declaredBytes) : undefined
      let put = false
      try {
        const bytes = await read((chunk) => {
          hash.update(chunk)
          early?.write(chunk)
        })
        if (bytes.byteLength > limits.maxFileBytes) throw new FileRefused('file_too_large', `a file may have at most ${limits.maxFileBytes} bytes`)
        const mediaType = await sniffMediaType(bytes)
        const ref: FileRef = { id, name, mediaType, size: bytes.byteLength, sha256: hash.digest('hex') }
        await early?.done()
        await db.transaction(async (tx) => {
          await tx.execute(sql`select pg_advisory_xact_lock(${QUOTA_LOCK_CLASS}, hashtext(${owner}))`)
          const [{ used }] = rowsOf<{ used: string }>(
            await tx.execute(sql`select coalesce(sum(size), 0)::bigint::text as used from files where owner = ${owner}`),
          )
          if (Number(used) + ref.size > quota) {
            const room = guest ? 'sign up for more room, or delete a chat with files' : 'delete a chat with files to make room'
            throw new FileRefused('quota_exceeded', `your files would pass your ${quota}-byte quota: ${room}`)
          }
          await tx.execute(sql`insert into files (id, owner, name, media_type, size, sha256, storage)
            values (${ref.id}, ${owner}, ${ref.name}, ${ref.mediaType}, ${ref.size}, ${ref.sha256}, ${blobs.kind})`)
          if (!early) await blobs.put(tx, ref.id, bytes)
          put = true
        })
        if (isImage(mediaType)) void thumbnails.make(ref, async () => bytes).catch((error) => console.error('[a2] thumbnail failed', error))
        return ref
      } catch (error) {
        // The object store is no part of the transaction: an object written before a failed commit goes.
        if (early) await early.abort().catch(() => {})
        else if (put && blobs.kind !== 'db') await blobs.delete(db, [id]).catch(() => {})
        throw error
      }
    },

    /** Stores an upload whose bytes are already whole (receive, with nothing left to arrive). */
    upload(owner: string, rawName: string, bytes: Uint8Array, options: { guest?: boolean } = {}): Promise<FileRef> {
      return this.receive(
        owner,
        rawName,
        async (write) => {
          write(bytes)
          return bytes
        },
        options,
      )
    },

    /** The file if `owner` owns it (any of their devices: the owner is the account), else undefined (a 404 either way). */
    async forOwner(id: string, owner: string): Promise<StoredFile | undefined> {
      const [file] = await select(sql`id = ${id} and owner = ${owner}`)
      return file
    },

    /** The file if the chat a live share link shows (`sessionId`) is the one whose message names it. */
    async forSharedChat(id: string, sessionId: string): Promise<StoredFile | undefined> {
      const [file] = await select(sql`id = ${id} and session_id = ${sessionId}`)
      return file
    },

    async bytesOf(file: StoredFile): Promise<Uint8Array | undefined> {
      return blobsOf(file.storage)?.get(db, file.id)
    },

    /**
     * An image's thumbnail (kept in its row, whichever back end holds its bytes), or undefined (no
     * image, or one that does not decode: the original is served instead). One not made yet (asked
     * for before the upload's own making ended, or after a crash cut it off) is made now.
     */
    async thumbOf(file: StoredFile): Promise<Uint8Array | undefined> {
      if (!isImage(file.mediaType)) return undefined
      const [row] = rowsOf<{ thumb: Uint8Array | null }>(await db.execute(sql`select thumb from files where id = ${file.id}`))
      if (!row) return undefined
      const thumb = row.thumb ?? (await thumbnails.make(file, () => this.bytesOf(file)))
      return thumb && thumb.byteLength > 0 ? new Uint8Array(thumb) : undefined
    },

    async byIds(ids: readonly string[]): Promise<StoredFile[]> {
      return ids.length === 0 ? [] : select(sql`id in ${ids}`)
    },

    /**
     * Admission for a message's files: each exists, is the pusher's, is exactly what the event
     * says (name, type, size, hash), and is unbound or already this chat's; the message's count and
     * bytes are within their limits. Then binds them to the chat (a compare-and-set: a file
     * another chat took in between makes the row count short, and the push is refused).
     */
    async admitMessageFiles(owner: string, sessionId: string, refs: readonly FileRef[]): Promise<void> {
      if (refs.length === 0) return
      if (refs.length > limits.maxFilesPerMessage)
        throw new FileRefused('too_many_files', `a message may carry at most ${limits.maxFilesPerMessage} files`)
      const total = refs.reduce((sum, ref) => sum + ref.size, 0)
      if (total > limits.maxMessageBytes)
        throw new FileRefused('file_too_large', `a message's files may have at most ${limits.maxMessageBytes} bytes together`)
      const ids = [...new Set(refs.map((ref) => ref.id))]
      const found = new Map((await select(sql`id in ${ids} and owner = ${owner}`)).map((file) => [file.id, file]))
      for (const ref of refs) {
        const file = found.get(ref.id)
        if (!file || (file.sessionId !== null && file.sessionId !== sessionId))
          throw new FileRefused('invalid_file_reference', 'a file the message names is not one of yours in this chat')
        if (file.name !== ref.name || file.mediaType !== ref.mediaType || file.size !== ref.size || file.sha256 !== ref.sha256) {
          throw new FileRefused('invalid_file_reference', `the message describes file ${ref.id} otherwise than it was uploaded`)
        }
      }
      const bound = rowsOf(
        await db.execute(
          sql`update files set session_id = ${sessionId} where id in ${ids} and owner = ${owner} and (session_id is null or session_id = ${sessionId}) returning id`,
        ),
      )
      if (bound.length !== ids.length) throw new FileRefused('invalid_file_reference', 'a file the message names was taken by another chat')
    },

    /** Rows, and ids holding bytes in the back end uploads go to: what "nothing stored" and "no byte remains" are checked against. */
    async census(): Promise<{ rows: number; blobs: string[] }> {
      const [{ n }] = rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from files`))
      return { rows: Number(n), blobs: await blobs.list(db) }
    },

    /** A chat's files go with it (after its log is deleted: a refused delete keeps them). */
    async deleteForSession(sessionId: string): Promise<number> {
      return remove(await select(sql`session_id = ${sessionId}`))
    },

    /** Every file of an account or guest, bound or not. */
    async deleteForOwner(owner: string): Promise<number> {
      return remove(await select(sql`owner = ${owner}`))
    },

    /** Uploads no message named within `olderThanMs` of arriving (a cancelled send, a closed tab). */
    async sweepUnreferenced(olderThanMs: number): Promise<number> {
      return remove(await select(sql`session_id is null and created_at < now() - make_interval(secs => ${olderThanMs / 1000})`))
    },
  }
}

/**
 * Makes each image's thumbnail once, off the upload's path (a 10 MB PNG's took 47-157 ms:
 * bench/README.md, figure 15): one making per file at a time in this process, and kept only in a
 * row that has none, so whichever making ends first (this process's or another's, the upload's or
 * a request's) is the one every reader gets. An image that does not decode gets an empty one, and
 * is never tried again.
 */
function thumbnailMaker(db: Db, makeThumbnail: typeof thumbnailOf) {
  const making = new Map<string, Promise<Uint8Array | undefined>>()
  return {
    make(file: { id: string; mediaType: string }, bytesOf: () => Promise<Uint8Array | undefined>): Promise<Uint8Array | undefined> {
      const running = making.get(file.id)
      if (running) return running
      const made = (async () => {
        const bytes = await bytesOf()
        if (!bytes) return undefined
        const thumb = (await makeThumbnail(bytes, file.mediaType)) ?? new Uint8Array(0)
        const [row] = rowsOf<{ thumb: Uint8Array }>(
          await db.execute(sql`update files set thumb = coalesce(thumb, ${Buffer.from(thumb)}) where id = ${file.id} returning thumb`),
        )
        return row ? new Uint8Array(row.thumb) : undefined
      })().finally(() => making.delete(file.id))
      making.set(file.id, made)
      return made
    },
  }
}
