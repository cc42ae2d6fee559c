/**
 * `npm run worker`: a standalone worker for scale-out. Any number of these and of app
 * instances share one Postgres (DATABASE_URL); set A2_EMBEDDED_WORKER=0 on the app
 * instances to leave all the work to them. PGlite is one process's database: a separate
 * worker cannot share it.
 */
import { bootChatProcess } from '@/lib/chat/server/process'
import { checkEnvAtBoot } from '@/lib/env'

if (!checkEnvAtBoot().DATABASE_URL) {
  console.error('[a2] npm run worker needs DATABASE_URL: PGlite lives inside the app process, which runs its own worker.')
  process.exit(2)
}

const { worker } = await bootChatProcess({ worker: true })
console.log(`[a2] worker ${worker?.id} running`)
