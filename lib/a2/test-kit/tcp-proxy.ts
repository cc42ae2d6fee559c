/**
 * A tiny TCP proxy between a store and Postgres that a test controls: `freeze()` stops
 * moving bytes in both directions (the connection stays open, statements hang: a network
 * partition), `thaw()` delivers what was held, `cut()` drops every connection (the server
 * went away). It models an unreachable store for real, below the driver.
 */
import net from 'node:net'
import type { AddressInfo } from 'node:net'

export interface TcpProxy {
  /** The target URL with host and port pointed at the proxy. */
  url: string
  port: number
  readonly frozen: boolean
  /** Connections open through the proxy right now. */
  readonly connections: number
  freeze(): void
  thaw(): void
  /** Destroys every open connection; new ones are still accepted. */
  cut(): void
  close(): Promise<void>
}

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl)
  const targetPort = Number(target.port || 5432)
  const targetHost = target.hostname
  let frozen = false
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket; flush: () => void }>()

  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost)
    // While frozen, bytes are held here in order and delivered on thaw.
    const held: Array<[net.Socket, Buffer]> = []
    const forward = (to: net.Socket) => (chunk: Buffer) => {
      if (frozen) held.push([to, chunk])
      else if (!to.destroyed) to.write(chunk)
    }
    client.on('data', forward(upstream))
    upstream.on('data', forward(client))
    const pair = {
      client,
      upstream,
      flush: () => {
        for (const [to, chunk] of held.splice(0)) if (!to.destroyed) to.write(chunk)
      },
    }
    pairs.add(pair)
    const end = () => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on('close', end)
    upstream.on('close', end)
    client.on('error', end)
    upstream.on('error', end)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const port = (server.address() as AddressInfo).port
  const url = new URL(targetUrl)
  url.hostname = '127.0.0.1'
  url.port = String(port)

  return {
    url: url.toString(),
    port,
    get frozen() {
      return frozen
    },
    get connections() {
      return pairs.size
    },
    freeze() {
      frozen = true
    },
    thaw() {
      frozen = false
      for (const pair of pairs) pair.flush()
    },
    cut() {
      for (const pair of [...pairs]) {
        pair.client.destroy()
        pair.upstream.destroy()
      }
      pairs.clear()
    },
    close() {
      frozen = false
      for (const pair of [...pairs]) {
        pair.client.destroy()
        pair.upstream.destroy()
      }
      pairs.clear()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
