/**
 * The S3-compatible back end (AWS S3, R2, MinIO …; docs/attachments.md): one object per file,
 * keyed `<prefix><file id>` (never the name), private (no ACL is set: the bucket's default,
 * which should deny public reads). The app serves the bytes itself after its own check.
 */
import { PassThrough } from 'node:stream'
import type { S3Client } from '@aws-sdk/client-s3'
import type { BlobStore } from './blob-store'

type Sdk = typeof import('@aws-sdk/client-s3')
/** The SDK is loaded on first use: ~2 s of import on a busy machine, which a deployment without S3 never pays. */
let sdk: Promise<Sdk> | undefined
const loadSdk = () => (sdk ??= import('@aws-sdk/client-s3'))

/** S3's smallest part but the last (5 MiB); an upload smaller than it is one part. */
const PART_BYTES = 5 * 1024 * 1024

export interface S3Settings {
  bucket: string
  endpoint?: string
  region: string
  accessKeyId?: string
  secretAccessKey?: string
  forcePathStyle: boolean
  /** Keys start with it (tests use one per run). */
  prefix?: string
}

export function s3Blobs(settings: S3Settings): BlobStore {
  let made: Promise<{ client: S3Client; s3: Sdk }> | undefined
  const connect = () =>
    (made ??= loadSdk().then((s3) => ({
      s3,
      client: new s3.S3Client({
        region: settings.region,
        endpoint: settings.endpoint,
        forcePathStyle: settings.forcePathStyle,
        credentials:
          settings.accessKeyId && settings.secretAccessKey
            ? { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey }
            : undefined,
        // A checksum of a streamed body goes in an aws-chunked trailer, which s3rver (the tests'
        // server) stores as part of the object: checksums only where the API requires one. The
        // row keeps the bytes' sha256, computed by the app as they arrived.
        requestChecksumCalculation: 'WHEN_REQUIRED',
      }),
    })))
  const prefix = settings.prefix ?? 'files/'
  const key = (id: string) => `${prefix}${id}`
  const remove = async (ids: readonly string[]) => {
    const { client, s3 } = await connect()
    for (let i = 0; i < ids.length; i += 1000) {
      const batch = ids.slice(i, i + 1000)
      await client.send(
        new s3.DeleteObjectsCommand({ Bucket: settings.bucket, Delete: { Objects: batch.map((id) => ({ Key: key(id) })), Quiet: true } }),
      )
    }
  }
  return {
    kind: 's3',
    async put(_tx, id, bytes) {
      const { client, s3 } = await connect()
      await client.send(new s3.PutObjectCommand({ Bucket: settings.bucket, Key: key(id), Body: bytes, ContentLength: bytes.byteLength }))
    },
    open(id, size) {
      // A multipart upload whose parts stream up as the body arrives, each with its length known
      // from the declared size (figure 15, bench/README.md: a 10 MB put after the body took 93-321
      // ms more). The object exists only once the upload is completed in done(): an upload cut
      // off or refused leaves none, however late the server handles what was sent. A single
      // streamed PutObject left one behind on s3rver under load (1 in 40 cut-off uploads at load
      // ~5): the server created it after the abort's delete had run.
      const cut = new AbortController()
      const started = connect().then(async ({ client, s3 }) => {
        const made = await client.send(new s3.CreateMultipartUploadCommand({ Bucket: settings.bucket, Key: key(id) }), { abortSignal: cut.signal })
        return { client, s3, uploadId: made.UploadId! }
      })
      started.catch(() => {}) // awaited by done(), or dropped by abort()
      const parts: Array<Promise<{ ETag?: string; PartNumber: number }>> = []
      /** The part being streamed, and how many of its bytes are still to come. */
      let part: { body: PassThrough; left: number } | undefined
      /** Declared bytes no part has taken yet. */
      let unassigned = size
      let overflowed = false
      const startPart = () => {
        const length = Math.min(PART_BYTES, unassigned)
        unassigned -= length
        const body = new PassThrough()
        const number = parts.length + 1
        const sent = started.then(({ client, s3, uploadId }) =>
          client
            .send(
              new s3.UploadPartCommand({
                Bucket: settings.bucket,
                Key: key(id),
                UploadId: uploadId,
                PartNumber: number,
                Body: body,
                ContentLength: length,
              }),
              { abortSignal: cut.signal },
            )
            .then((answer) => ({ ETag: answer.ETag, PartNumber: number })),
        )
        sent.catch(() => {})
        parts.push(sent)
        return { body, left: length }
      }
      return {
        write(chunk) {
          for (let at = 0; at < chunk.byteLength;) {
            if (!part && unassigned === 0) return void (overflowed = true) // more than declared: done() refuses it
            part ??= startPart()
            const n = Math.min(part.left, chunk.byteLength - at)
            part.body.write(chunk.subarray(at, at + n))
            part.left -= n
            at += n
            if (part.left === 0) {
              part.body.end()
              part = undefined
            }
          }
        },
        async done() {
          if (overflowed || part || unassigned > 0) throw new Error(`the upload's body did not match its declared ${size} bytes`)
          const { client, s3, uploadId } = await started
          const sent = await Promise.all(parts)
          await client.send(
            new s3.CompleteMultipartUploadCommand({ Bucket: settings.bucket, Key: key(id), UploadId: uploadId, MultipartUpload: { Parts: sent } }),
          )
        },
        async abort() {
          cut.abort()
          part?.body.destroy()
          part = undefined
          await Promise.allSettled(parts)
          const upload = await started.catch(() => undefined)
          if (upload) {
            const { client, s3, uploadId } = upload
            await client.send(new s3.AbortMultipartUploadCommand({ Bucket: settings.bucket, Key: key(id), UploadId: uploadId })).catch(() => {})
          }
          await remove([id]) // an upload completed before the abort (refused by the quota after its bytes were whole)
        },
      }
    },
    async get(_db, id) {
      const { client, s3 } = await connect()
      try {
        const object = await client.send(new s3.GetObjectCommand({ Bucket: settings.bucket, Key: key(id) }))
        return object.Body ? await object.Body.transformToByteArray() : undefined
      } catch (error) {
        if (error instanceof s3.NoSuchKey) return undefined
        throw error
      }
    },
    delete: (_db, ids) => remove(ids),
    async list() {
      const { client, s3 } = await connect()
      const ids: string[] = []
      let token: string | undefined
      do {
        const page = await client.send(new s3.ListObjectsV2Command({ Bucket: settings.bucket, Prefix: prefix, ContinuationToken: token }))
        ids.push(...(page.Contents ?? []).flatMap((o) => (o.Key ? [o.Key.slice(prefix.length)] : [])))
        token = page.IsTruncated ? page.NextContinuationToken : undefined
      } while (token)
      return ids
    },
  }
}
