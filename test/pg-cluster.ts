/**
 * A Postgres cluster of a test's own, to restart under a running app: initdb in a temporary
 * directory, its own port, trust auth. `initdb` refuses to run as root (CI does), so as root
 * every command runs as the `postgres` user (`runuser`), in a directory that user owns.
 * Found when the machine has Postgres's server binaries (Debian's postgresql-NN), else
 * `available` is false and the test that needs it says why it did not run.
 */
import { execFile } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import postgres from 'postgres'

const run = promisify(execFile)

function binDir(): string | undefined {
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))
  return versions[0] ? join(root, versions[0], 'bin') : undefined
}

const BIN = binDir()
const AS_ROOT = process.getuid?.() === 0
/** Root needs a user initdb accepts. */
export const clusterAvailable = BIN !== undefined && (!AS_ROOT || existsSync('/usr/sbin/runuser') || existsSync('/sbin/runuser'))

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

export interface Cluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string
  /** `pg_ctl restart -m fast`; resolves with when the server answered a statement again (Date.now()). */
  restartFast(): Promise<{ downAt: number; answeredAt: number }>
  /**
   * `pg_ctl stop -m immediate`, a start `downMs` later; resolves with when it answered again.
   * `whileDown` is called (not awaited) once the server is down.
   */
  crashAndStart(downMs: number, whileDown?: () => void): Promise<{ downAt: number; answeredAt: number }>
  destroy(): Promise<void>
}

export async function startCluster(): Promise<Cluster> {
  if (!BIN) throw new Error('no Postgres server binaries (apt-get install postgresql)')
  const dir = mkdtempSync(join(tmpdir(), 'a2-pg-'))
  if (AS_ROOT)
    chownSync(dir, Number((await run('id', ['-u', 'postgres'])).stdout.trim()), Number((await run('id', ['-g', 'postgres'])).stdout.trim()))
  const data = join(dir, 'data')
  const port = await freePort()
  const pg = (tool: string, args: string[]) =>
    AS_ROOT ? run('runuser', ['-u', 'postgres', '--', join(BIN!, tool), ...args]) : run(join(BIN!, tool), args)
  await pg('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '--no-instructions'])
  // Its own socket directory and port; fsync off: the test is about connections, not durability.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60 -c shared_buffers=32MB`
  const start = () => pg('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '30', 'start'])
  await start()
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`

  /** Whether a fresh connection gets an answer now. */
  const answers = async (): Promise<boolean> => {
    const probe = postgres(url, { max: 1, connect_timeout: 1, onnotice: () => {}, backoff: () => 0.01 })
    try {
      await probe`select 1`
      return true
    } catch {
      return false
    } finally {
      await probe.end({ timeout: 0 }).catch(() => {})
    }
  }
  /** When a fresh connection first gets an answer (tried every 10 ms). */
  const firstAnswer = async (): Promise<number> => {
    while (!(await answers())) await new Promise((resolve) => setTimeout(resolve, 10))
    return Date.now()
  }

  return {
    url,
    async restartFast() {
      const downAt = Date.now()
      let restarted = false
      const restarting = pg('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-m', 'fast', '-w', '-t', '30', 'restart']).finally(
        () => (restarted = true),
      )
      // The first answer after the server was seen down (pg_ctl's own wait polls, and would say later).
      while (!restarted && (await answers())) await new Promise((resolve) => setTimeout(resolve, 5))
      const answeredAt = await firstAnswer()
      await restarting
      return { downAt, answeredAt }
    },
    async crashAndStart(downMs, whileDown) {
      const downAt = Date.now()
      await pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop'])
      whileDown?.()
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, downAt + downMs - Date.now())))
      await start()
      return { downAt, answeredAt: await firstAnswer() }
    },
    async destroy() {
      await pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
