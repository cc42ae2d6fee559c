/**
 * A throwaway Postgres cluster for chaos tests: `initdb` into a temporary directory, its own
 * port and socket directory, started and stopped with `pg_ctl`, so a test can stop and start
 * the database under running app instances and workers without touching the shared server.
 *
 * initdb refuses to run as root: as root every command runs as the `postgres` OS user
 * (`runuser -u postgres --`) in a directory that user owns. Binaries: PG_BIN, else the newest
 * `/usr/lib/postgresql/<version>/bin`, else PATH.
 *
 * Library:
 *   const pg = await createThrowawayPg({ port: 55432 })   // initdb + start; pg.url is ready to use
 *   await pg.stop()        // pg_ctl stop -m fast (also: 'immediate', a crash)
 *   await pg.start()
 *   await pg.restart()
 *   await pg.destroy()     // stop (immediate) and delete the directory; safe to call twice
 *
 * CLI (for poking at it by hand):
 *   tsx scripts/pg-throwaway.ts create [--port 55432] [--dir /tmp/x]   prints JSON { url, dir, port }
 *   tsx scripts/pg-throwaway.ts stop|start|restart --dir /tmp/x [--mode fast|immediate]
 *   tsx scripts/pg-throwaway.ts destroy --dir /tmp/x
 */
import { execFile, execFileSync } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)

export type StopMode = 'smart' | 'fast' | 'immediate'

export interface ThrowawayPg {
  /** postgres://postgres@127.0.0.1:<port>/postgres (trust auth). */
  readonly url: string
  readonly port: number
  /** The cluster's directory: `data/` (PGDATA), `postgres.log`, and the unix socket. */
  readonly dir: string
  readonly logFile: string
  /** The URL of another database in this cluster. */
  urlFor(database: string): string
  isRunning(): Promise<boolean>
  start(): Promise<void>
  stop(mode?: StopMode): Promise<void>
  restart(mode?: StopMode): Promise<void>
  /** Stops the cluster (immediately) if it runs and deletes its directory. Never throws. */
  destroy(): Promise<void>
  /** The server log so far (for failure messages). */
  log(): string
}

export interface ThrowawayOptions {
  /** Port to listen on (127.0.0.1). Default: 55432, or the next free port above it. */
  port?: number
  /** Directory to use (created if missing); default a fresh one under the OS temp dir. */
  dir?: string
  /** postgresql.conf lines to append. */
  settings?: Record<string, string | number>
  /** Stop and delete the cluster when this process exits without having destroyed it (default true). */
  destroyOnExit?: boolean
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0

export function pgBinDir(): string | undefined {
  if (process.env.PG_BIN) return process.env.PG_BIN
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))
  return versions.length ? path.join(root, versions[0], 'bin') : undefined
}

/** Why a throwaway cluster cannot run here, or undefined when it can. */
export function throwawayUnavailable(): string | undefined {
  const bin = pgBinDir()
  if (!bin) return 'no Postgres server binaries (set PG_BIN, or install postgresql)'
  if (isRoot()) {
    // initdb refuses root: commands run as the postgres OS user through runuser.
    if (!['/usr/sbin/runuser', '/sbin/runuser', '/usr/bin/runuser'].some((p) => existsSync(p))) return 'running as root without runuser'
    if (
      !readFileSync('/etc/passwd', 'utf8')
        .split('\n')
        .some((line) => line.startsWith('postgres:'))
    )
      return 'running as root and there is no postgres OS user'
  }
  return undefined
}

async function idsOf(user: string): Promise<{ uid: number; gid: number }> {
  const [{ stdout: uid }, { stdout: gid }] = await Promise.all([run('id', ['-u', user]), run('id', ['-g', user])])
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

async function pickPort(preferred: number): Promise<number> {
  for (let port = preferred; port < preferred + 200; port++) if (await portFree(port)) return port
  throw new Error(`no free port in ${preferred}..${preferred + 199}`)
}

function pgCommand(binary: string, args: string[]): [string, string[]] {
  const bin = pgBinDir()
  const file = bin ? path.join(bin, binary) : binary
  return isRoot() ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args]
}

/** Runs a Postgres binary, as the postgres OS user when we are root. */
async function pgExec(binary: string, args: string[], options: { timeoutMs?: number } = {}): Promise<string> {
  const [command, argv] = pgCommand(binary, args)
  try {
    const { stdout, stderr } = await run(command, argv, { timeout: options.timeoutMs ?? 60_000, cwd: tmpdir() })
    return stdout + stderr
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string }
    throw new Error(`${binary} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: error })
  }
}

/** Opens an existing cluster directory (made by createThrowawayPg) without starting it. */
export function openThrowawayPg(dir: string): ThrowawayPg {
  const meta = JSON.parse(readFileSync(path.join(dir, 'throwaway.json'), 'utf8')) as { port: number }
  const port = meta.port
  const data = path.join(dir, 'data')
  const logFile = path.join(dir, 'postgres.log')
  const urlFor = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`
  let destroyed = false

  const isRunning = async () => {
    if (destroyed || !existsSync(data)) return false
    try {
      await pgExec('pg_ctl', ['-D', data, 'status'], { timeoutMs: 10_000 })
      return true
    } catch {
      return false // exit code 3: not running
    }
  }
  const start = async () => {
    // -w waits until the server accepts connections (it is ready for the URL when this resolves).
    await pgExec('pg_ctl', ['-D', data, '-l', logFile, '-w', '-t', '60', 'start'])
  }
  const stop = async (mode: StopMode = 'fast') => {
    await pgExec('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop'])
  }

  return {
    url: urlFor('postgres'),
    port,
    dir,
    logFile,
    urlFor,
    isRunning,
    start,
    stop,
    async restart(mode: StopMode = 'fast') {
      await stop(mode)
      await start()
    },
    async destroy() {
      if (destroyed) return
      try {
        if (await isRunning()) await stop('immediate')
      } catch {
        // fall through: delete anyway
      }
      destroyed = true
      rmSync(dir, { recursive: true, force: true })
    },
    log() {
      try {
        return readFileSync(logFile, 'utf8')
      } catch {
        return ''
      }
    },
  }
}

/** initdb a fresh cluster and start it. */
export async function createThrowawayPg(options: ThrowawayOptions = {}): Promise<ThrowawayPg> {
  const unavailable = throwawayUnavailable()
  if (unavailable) throw new Error(`throwaway Postgres unavailable: ${unavailable}`)
  const port = await pickPort(options.port ?? 55432)
  const dir = options.dir ?? mkdtempSync(path.join(tmpdir(), 'a2-pg-'))
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true })
  if (isRoot()) {
    const { uid, gid } = await idsOf('postgres')
    chownSync(dir, uid, gid)
  }
  const data = path.join(dir, 'data')
  try {
    // --no-sync: a throwaway cluster needs no durability against an OS crash (a stop -m fast
    // or immediate of the server alone still loses no committed transaction).
    await pgExec('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions'])
    const settings: Record<string, string | number> = {
      port,
      listen_addresses: "'127.0.0.1'",
      unix_socket_directories: `'${dir}'`,
      max_connections: 100,
      fsync: 'off',
      full_page_writes: 'off',
      shared_buffers: "'32MB'",
      log_min_messages: 'warning',
      ...options.settings,
    }
    const conf = Object.entries(settings)
      .map(([k, v]) => `${k} = ${v}`)
      .join('\n')
    // As root the file belongs to postgres; appending through runuser keeps ownership sane.
    const confPath = path.join(data, 'postgresql.conf')
    const original = readFileSync(confPath, 'utf8')
    writeFileSync(confPath, `${original}\n# scripts/pg-throwaway.ts\n${conf}\n`)
    writeFileSync(path.join(dir, 'throwaway.json'), JSON.stringify({ port }))
    const pg = openThrowawayPg(dir)
    await pg.start()
    if (options.destroyOnExit !== false) {
      // The runner died before destroy(): don't leave a server running on its port.
      const onExit = () => {
        if (!existsSync(path.join(data, 'postmaster.pid'))) return rmSync(dir, { recursive: true, force: true })
        try {
          const [command, argv] = pgCommand('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop'])
          execFileSync(command, argv, { stdio: 'ignore', timeout: 10_000, cwd: tmpdir() })
        } catch {
          // best effort
        }
        rmSync(dir, { recursive: true, force: true })
      }
      process.once('exit', onExit)
      const destroy = pg.destroy
      return {
        ...pg,
        async destroy() {
          process.removeListener('exit', onExit)
          await destroy()
        },
      }
    }
    return pg
  } catch (error) {
    const log = (() => {
      try {
        return readFileSync(path.join(dir, 'postgres.log'), 'utf8')
      } catch {
        return ''
      }
    })()
    try {
      await pgExec('pg_ctl', ['-D', data, '-m', 'immediate', 'stop'])
    } catch {
      // not running
    }
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`${(error as Error).message}${log ? `\n--- postgres.log ---\n${log}` : ''}`, { cause: error })
  }
}

const runDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href

if (runDirectly) {
  const [command, ...rest] = process.argv.slice(2)
  const flag = (name: string) => {
    const i = rest.indexOf(`--${name}`)
    return i >= 0 ? rest[i + 1] : undefined
  }
  const dir = flag('dir')
  const mode = (flag('mode') ?? 'fast') as StopMode
  const need = () => {
    if (!dir) throw new Error(`${command} needs --dir`)
    return openThrowawayPg(dir)
  }
  switch (command) {
    case 'create': {
      const pg = await createThrowawayPg({ port: flag('port') ? Number(flag('port')) : undefined, dir, destroyOnExit: false })
      console.log(JSON.stringify({ url: pg.url, dir: pg.dir, port: pg.port }))
      break
    }
    case 'start':
      await need().start()
      break
    case 'stop':
      await need().stop(mode)
      break
    case 'restart':
      await need().restart(mode)
      break
    case 'destroy':
      await need().destroy()
      break
    default:
      console.error('usage: tsx scripts/pg-throwaway.ts create [--port N] [--dir D] | start|stop|restart|destroy --dir D [--mode fast|immediate]')
      process.exit(2)
  }
}
