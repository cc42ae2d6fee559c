/**
 * The app's files, configured from the environment: the database back end unless A2_S3_BUCKET
 * names a bucket.
 */
import { env, type Env } from '@/lib/env'
import { getStore } from '@/lib/store'
import type { Db } from '@/lib/a2/server'
import { databaseBlobs, type BlobStore, type StorageKind } from './blob-store'
import { createFiles, type FileLimits, type Files } from './files'
import { s3Blobs } from './s3-store'

export type { FileRef, Files, StoredFile } from './files'
export { FileRefused } from './refused'

/** The S3 client of the settings in force (kept: a client holds its connections), by its settings. */
let s3Cache: { key: string; blobs: BlobStore } | undefined

export function fileLimits(e: Env = env()): FileLimits {
  return {
    maxFileBytes: e.A2_MAX_FILE_BYTES,
    maxFilesPerMessage: e.A2_MAX_FILES_PER_MESSAGE,
    maxMessageBytes: e.A2_MAX_MESSAGE_FILE_BYTES,
    quotaBytesPerUser: e.A2_FILE_QUOTA_BYTES_PER_USER,
    quotaBytesPerGuest: e.A2_FILE_QUOTA_BYTES_PER_GUEST,
  }
}

/** The S3 back end the environment configures, or undefined. */
export function configuredS3(e: Env = env()): BlobStore | undefined {
  if (!e.A2_S3_BUCKET) return undefined
  const settings = {
    bucket: e.A2_S3_BUCKET,
    endpoint: e.A2_S3_ENDPOINT,
    region: e.A2_S3_REGION,
    accessKeyId: e.A2_S3_ACCESS_KEY_ID,
    secretAccessKey: e.A2_S3_SECRET_ACCESS_KEY,
    forcePathStyle: e.A2_S3_FORCE_PATH_STYLE,
  }
  const key = JSON.stringify(settings)
  if (s3Cache?.key !== key) s3Cache = { key, blobs: s3Blobs(settings) }
  return s3Cache.blobs
}

/** The files of the process's store, on the back end the environment names (cheap: the store and S3 client are kept). */
export async function getFiles(): Promise<Files> {
  return filesOf((await getStore()).db)
}

/** The files of a database (a worker's store, a test's), on the back end the environment names. */
export function filesOf(db: Db): Files {
  const s3 = configuredS3()
  return createFiles({ db, blobs: s3 ?? databaseBlobs, blobsOf: (kind: StorageKind) => (kind === 'db' ? databaseBlobs : s3), limits: fileLimits() })
}
