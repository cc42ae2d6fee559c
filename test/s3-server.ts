/**
 * A real S3-compatible server for the tests (s3rver, from the npm registry), on a free port of
 * this machine with its own directory and bucket: what the S3 back end talks to in the store tests.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import S3rver from 's3rver'

export interface TestS3 {
  endpoint: string
  bucket: string
  env: Record<string, string>
  stop(): Promise<void>
}

export async function startS3Server(): Promise<TestS3> {
  const directory = mkdtempSync(path.join(tmpdir(), 'a2-s3-'))
  const bucket = 'a2-files'
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] })
  const { port } = (await server.run()) as { port: number }
  const endpoint = `http://127.0.0.1:${port}`
  return {
    endpoint,
    bucket,
    env: {
      A2_S3_BUCKET: bucket,
      A2_S3_ENDPOINT: endpoint,
      A2_S3_REGION: 'us-east-1',
      A2_S3_ACCESS_KEY_ID: 'S3RVER',
      A2_S3_SECRET_ACCESS_KEY: 'S3RVER',
      A2_S3_FORCE_PATH_STYLE: '1',
    },
    async stop() {
      await server.close()
      rmSync(directory, { recursive: true, force: true })
    },
  }
}
