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
      // One PutObject whose body is the upload's, streamed as it arrives: the object is whole
      // when the body is (bench/README.md, figure 15: a 10 MB put after the body took 93-321 ms more).
      const body = new PassThrough()
      const cut = new AbortController()
      const sent = connect().then(({ client, s3 }) =>
        client.send(new s3.PutObjectCommand({ Bucket: settings.bucket, Key: key(id), Body: body, ContentLength: size }), {
          abortSignal: cut.signal,
        }),
      )
      sent.catch(() => {}) // awaited by done(), or dropped by abort()
      return {
        write: (chunk) => void body.write(chunk),
        async done() {
          body.end()
          await sent
        },
        async abort() {
          cut.abort()
          body.destroy()
          await sent.catch(() => {})
          await remove([id]) // a put that had ended before the abort
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
