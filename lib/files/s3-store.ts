/**
 * The S3-compatible back end (AWS S3, R2, MinIO …; docs/attachments.md): one object per file,
 * keyed `<prefix><file id>` (never the name), private (no ACL is set: the bucket's default,
 * which should deny public reads). The app serves the bytes itself after its own check.
 */
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
      }),
    })))
  const prefix = settings.prefix ?? 'files/'
  const key = (id: string) => `${prefix}${id}`
  return {
    kind: 's3',
    async put(_tx, id, bytes) {
      const { client, s3 } = await connect()
      await client.send(new s3.PutObjectCommand({ Bucket: settings.bucket, Key: key(id), Body: bytes, ContentLength: bytes.byteLength }))
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
    async delete(_db, ids) {
      const { client, s3 } = await connect()
      for (let i = 0; i < ids.length; i += 1000) {
        const batch = ids.slice(i, i + 1000)
        await client.send(
          new s3.DeleteObjectsCommand({ Bucket: settings.bucket, Delete: { Objects: batch.map((id) => ({ Key: key(id) })), Quiet: true } }),
        )
      }
    },
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
