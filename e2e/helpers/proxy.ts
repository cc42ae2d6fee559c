/**
 * A TCP proxy in front of the app, so a test can cut the browser's connections for real
 * (RST/FIN on the socket, as a dropped Wi-Fi or a load balancer restart would) and refuse
 * new ones for a while. The page is opened through the proxy's origin; cookies are
 * per host, not per port, so the identity is the same.
 */
import { createServer, connect, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'

export interface CuttableProxy {
  /** The origin to open pages on, e.g. `http://127.0.0.1:40123`. */
  origin: string
  /** Destroys every open connection and refuses new ones for `downMs`. */
  cut(downMs: number): Promise<void>
  /** Accepts connections again at once (an outage of unknown length, ended when the test says). */
  reopen(): void
  /** How many browser connections were cut so far. */
  cutCount(): number
  close(): Promise<void>
}

export async function startProxy(target: { host: string; port: number }): Promise<CuttableProxy> {
  const sockets = new Set<Socket>()
  let downUntil = 0
  let cuts = 0
  const server: Server = createServer((client) => {
    if (Date.now() < downUntil) {
      client.resetAndDestroy()
      return
    }
    const upstream = connect(target.port, target.host)
    sockets.add(client)
    sockets.add(upstream)
    const drop = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    origin: `http://127.0.0.1:${port}`,
    async cut(downMs) {
      downUntil = Date.now() + downMs
      cuts += sockets.size / 2 // each browser connection is a pair of sockets
      for (const socket of sockets) socket.resetAndDestroy()
      sockets.clear()
    },
    reopen() {
      downUntil = 0
    },
    cutCount: () => cuts,
    close() {
      for (const socket of sockets) socket.destroy()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}

/** The app's host and port, from Playwright's baseURL. */
export function appTarget(baseURL: string | undefined): { host: string; port: number } {
  const url = new URL(baseURL ?? `http://127.0.0.1:${process.env.E2E_APP_PORT || 3100}`)
  return { host: url.hostname, port: Number(url.port) }
}
