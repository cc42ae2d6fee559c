/**
 * A real S3-compatible server (s3rver, as the tests start it: test/s3-server.ts) on a process of
 * its own (figure 15), so neither the app nor the client shares its event loop. Ready with the
 * A2_S3_* settings that point the app at it.
 */
import { startS3Server } from '@/test/s3-server'
import { serveParent, tellParent } from './lib/children'

const s3 = await startS3Server()
serveParent({}, () => s3.stop())
tellParent({ type: 'ready', pid: process.pid, env: s3.env })
