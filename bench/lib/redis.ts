/**
 * A redis-server of the bench's own (figure 16's anchor): Debian's binary on a free loopback
 * port, its working directory a fresh temp dir, every other setting Redis's compiled-in
 * default (no config file: RDB snapshots at `save 3600 1 300 100 60 10000`, no AOF). Ended by
 * its pid on every way out of the run (`track`), its directory removed when it stops.
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import net, { type AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { track } from './children'
import { within } from './time'

export interface BenchRedis {
  url: string
  pid: number
  /** What it ran (`redis-server --version`'s first words). */
  version: string
  stop(): Promise<void>
}

const BINARY = process.env.BENCH_REDIS_SERVER || 'redis-server'

/** The server's version, or undefined when there is no redis-server on this machine. */
export function redisVersion(): string | undefined {
  const probe = spawnSync(BINARY, ['--version'], { encoding: 'utf8' })
  return probe.status === 0 ? probe.stdout.trim().split(' ').slice(0, 3).join(' ') : undefined
}

async function freePort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

export async function startRedis(): Promise<BenchRedis> {
  const version = redisVersion()
  if (!version) throw new Error(`no ${BINARY} on this machine`)
  const dir = mkdtempSync(path.join(os.tmpdir(), 'a2-bench-redis-'))
  const port = await freePort()
  const child = spawn(BINARY, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir], { stdio: ['ignore', 'pipe', 'inherit'] })
  track(child)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let log = ''
  await within(
    new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        log += chunk.toString()
        if (log.includes('Ready to accept connections')) resolve()
      })
      void exited.then(() => reject(new Error(`redis-server exited before it was ready: ${log.slice(-500)}`)))
    }),
    10_000,
    'redis-server to start',
  )
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid!,
    version,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM')
        await within(exited, 5_000, 'redis-server to exit').catch(() => child.kill('SIGKILL'))
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
