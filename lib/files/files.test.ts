/**
 * An upload as its body arrives, on both stores and both back ends (the database's table, and a
 * real S3-compatible server): the bytes stored while they arrive are dropped when the body is cut
 * off or the upload refused; an image's thumbnail is made off the upload's path, exactly once,
 * also when it is asked for before it exists or after a crash cut its making off.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDb, layers, type TestDb } from '@/test/db'
import { startS3Server, type TestS3 } from '@/test/s3-server'
import { png, text } from '@/test/file-fixtures'
import type { Store } from '@/lib/a2/server'
import { waitUntil } from '@/lib/a2/testing'
import { databaseBlobs, type BlobStore } from './blob-store'
import { createFiles, type FileLimits } from './files'
import { FileRefused } from './refused'
import { s3Blobs } from './s3-store'
import { thumbnailOf } from './thumbnail'

const limits: FileLimits = {
  maxFileBytes: 16 * 1024 * 1024,
  maxFilesPerMessage: 8,
  maxMessageBytes: 64 * 1024 * 1024,
  quotaBytesPerUser: 1024 * 1024 * 1024,
  quotaBytesPerGuest: 1024 * 1024 * 1024,
}
const cases = layers.flatMap((kind) => (['db', 's3'] as const).map((backend) => [kind, backend] as const))

/** A body of `bytes` in 64 KiB chunks, each handed to `write` as it "arrives"; `cutAt` throws there instead, as a client that went away. */
function arriving(bytes: Uint8Array, cutAt?: number) {
  return async (write: (chunk: Uint8Array) => void): Promise<Uint8Array> => {
    for (let at = 0; at < bytes.length; at += 64 * 1024) {
      if (cutAt !== undefined && at >= cutAt) throw new FileRefused('truncated_file', 'the upload was cut off before its end')
      write(bytes.subarray(at, at + 64 * 1024))
      await new Promise((resolve) => setImmediate(resolve))
    }
    return bytes
  }
}

/** A thumbnail maker that counts its makings and holds each until released. */
function heldThumbnails() {
  let calls = 0
  const waiting: Array<() => void> = []
  const make: typeof thumbnailOf = async (bytes, mediaType) => {
    calls++
    await new Promise<void>((resolve) => waiting.push(resolve))
    return thumbnailOf(bytes, mediaType)
  }
  return { make, calls: () => calls, release: () => waiting.splice(0).forEach((go) => go()) }
}

describe.each(cases)('uploads on %s, bytes in %s', (kind, backend) => {
  let testDb: TestDb
  let store: Store
  let s3: TestS3 | undefined
  let blobs: BlobStore
  beforeAll(async () => {
    testDb = await createTestDb(kind)
    store = await testDb.open()
    s3 = backend === 's3' ? await startS3Server() : undefined
    blobs = s3
      ? s3Blobs({
          bucket: s3.bucket,
          endpoint: s3.endpoint,
          region: 'us-east-1',
          accessKeyId: 'S3RVER',
          secretAccessKey: 'S3RVER',
          forcePathStyle: true,
        })
      : databaseBlobs
  }, 180_000)
  afterAll(async () => {
    await testDb?.drop() // closes the store
    await s3?.stop()
  })
  const filesWith = (makeThumbnail?: typeof thumbnailOf) => createFiles({ db: store.db, blobs, limits, makeThumbnail })
  /** Six megabytes of text: more than one network chunk and one S3 part's minimum. */
  const big = text('lorem ipsum dolor sit amet\n'.repeat(240_000))

  it('the bytes stored as they arrive are the upload, whole and hashed', async () => {
    const files = filesWith()
    const ref = await files.receive('owner-1', 'big.txt', arriving(big), { declaredBytes: big.length })
    expect(ref).toMatchObject({ mediaType: 'text/plain', size: big.length })
    const { createHash } = await import('node:crypto')
    expect(ref.sha256).toBe(createHash('sha256').update(big).digest('hex'))
    const [stored] = await files.byIds([ref.id])
    expect(Buffer.from((await files.bytesOf(stored))!).equals(Buffer.from(big))).toBe(true)
  })

  // The database back end has no open(): its bytes go in the row's transaction.
  if (backend === 's3')
    it('an object whose every byte was handed over lands only once the upload is taken: refused then, nothing is left, however late', async () => {
      const writer = blobs.open!('whole-then-refused', big.length)
      await arriving(big)((chunk) => writer.write(chunk))
      // Every byte is on its way, and the upload is not taken yet (its type or quota may still refuse it): no object
      // may exist. One streamed PUT showed it at once (s3rver lists an object while its PUT runs, and keeps a cut-off
      // one), and under load the server made it after the abort's delete had run.
      const landed = await waitUntil(async () => (await blobs.list(store.db)).includes('whole-then-refused') || undefined, 'the object', 2_000).then(
        () => true,
        () => false,
      )
      await writer.abort()
      expect(landed).toBe(false)
      expect(await blobs.list(store.db)).not.toContain('whole-then-refused')
    })

  it('a body cut off half-way, or refused once whole, leaves nothing stored', async () => {
    const files = filesWith()
    const before = await files.census()
    await expect(files.receive('owner-2', 'cut.txt', arriving(big, big.length / 2), { declaredBytes: big.length })).rejects.toMatchObject({
      code: 'truncated_file',
    })
    // Whole, then refused: the type (bytes no image, PDF or text), and the quota.
    const binary = new Uint8Array(big.length).fill(0x00)
    binary.set([0x7f, 0x45, 0x4c, 0x46])
    await expect(files.receive('owner-2', 'x.png', arriving(binary), { declaredBytes: binary.length })).rejects.toMatchObject({
      code: 'unsupported_file_type',
    })
    const guest = createFiles({ db: store.db, blobs, limits: { ...limits, quotaBytesPerGuest: 1024 } })
    await expect(guest.receive('owner-2', 'big.txt', arriving(big), { guest: true, declaredBytes: big.length })).rejects.toMatchObject({
      code: 'quota_exceeded',
    })
    const after = await files.census()
    expect(after.rows).toBe(before.rows)
    expect(after.blobs.sort()).toEqual(before.blobs.sort())
  })

  it("an image's thumbnail is made after the upload, once; asked for before it exists, it is that one", async () => {
    const held = heldThumbnails()
    const files = filesWith(held.make)
    const ref = await files.receive('owner-3', 'wide.png', arriving(png(800, 600))) // answered before its thumbnail is made
    await waitUntil(async () => held.calls() === 1, "the upload's thumbnail making to start")
    const [file] = await files.byIds([ref.id])
    const asked = [files.thumbOf(file), files.thumbOf(file)]
    held.release()
    const [first, second] = await Promise.all(asked)
    const { default: sharp } = await import('sharp')
    expect(await sharp(first!).metadata()).toMatchObject({ format: 'webp', width: 320, height: 240 })
    expect(second).toEqual(first)
    expect(await files.thumbOf(file)).toEqual(first)
    expect(held.calls()).toBe(1)
  })

  it('a thumbnail whose making a crash cut off is made when asked for, once, and a late one never replaces it', async () => {
    // The process that took the upload stops mid-making: its making is held, and ends (late) only at the test's end.
    const crashed = heldThumbnails()
    const crashedFiles = filesWith(crashed.make)
    const ref = await crashedFiles.receive('owner-4', 'photo.png', arriving(png(640, 640)))
    await waitUntil(async () => crashed.calls() === 1, 'the making to start')
    const [file] = await crashedFiles.byIds([ref.id])
    const lateAsk = crashedFiles.thumbOf(file) // joins the stopped making

    const restarted = heldThumbnails()
    const files = filesWith(restarted.make)
    const asked = files.thumbOf(file)
    await waitUntil(async () => restarted.calls() === 1, 'the making on request to start')
    restarted.release()
    const thumb = await asked
    const { default: sharp } = await import('sharp')
    expect(await sharp(thumb!).metadata()).toMatchObject({ format: 'webp', width: 320, height: 320 })
    expect(await files.thumbOf(file)).toEqual(thumb)
    expect(restarted.calls()).toBe(1)

    crashed.release()
    expect(await lateAsk).toEqual(thumb)
    expect(await files.thumbOf(file)).toEqual(thumb)
  })

  it('an image that does not decode has no thumbnail (its original is served), and is tried once', async () => {
    let calls = 0
    const files = filesWith(async (bytes, mediaType) => {
      calls++
      return thumbnailOf(bytes, mediaType)
    })
    // A PNG whose magic bytes and trailer are right and whose image data is not.
    const broken = png(64, 64)
    broken.fill(0x55, 40, broken.length - 12)
    const ref = await files.receive('owner-5', 'broken.png', arriving(broken))
    const [file] = await files.byIds([ref.id])
    expect(await files.thumbOf(file)).toBeUndefined()
    expect(await files.thumbOf(file)).toBeUndefined()
    expect(calls).toBe(1)
  })
})
