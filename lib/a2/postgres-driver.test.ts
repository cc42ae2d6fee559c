/**
 * What the store's Postgres driver (postgres.js, patched: patches/) does when a connection
 * dies at the wrong moment. A new connection's first statement is the driver's own array-types
 * query (fetch_types); a restart or a killed backend that lands on it made that query's
 * rejection unhandled (porsager/postgres#1192), and Node ends a process on an unhandled
 * rejection: one Postgres restart could kill every worker that was reconnecting.
 */
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import postgres from 'postgres'
import { POSTGRES_URL } from './test-kit/db'

describe.runIf(POSTGRES_URL)('the Postgres driver', () => {
  const servers: net.Server[] = []
  afterAll(() => {
    for (const server of servers) server.close()
  })

  /** A proxy to Postgres that resets the first connection as the server answers its array-types query. */
  async function cutAtTypesQuery(): Promise<{ url: string; cuts: () => number }> {
    const target = new URL(POSTGRES_URL)
    let cut = 0
    const server = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname)
      let typesAsked = false
      client.on('data', (chunk) => {
        if (cut === 0 && chunk.includes('pg_catalog.pg_type')) typesAsked = true
        upstream.write(chunk)
      })
      upstream.on('data', (chunk) => {
        // The server is answering the types query: the connection resets under the driver
        // (ECONNRESET on its read), as a restarting server's backends do.
        if (typesAsked && cut === 0) {
          cut++
          client.resetAndDestroy()
          upstream.destroy()
          return
        }
        client.write(chunk)
      })
      for (const socket of [client, upstream]) socket.on('error', () => {}).on('close', () => (client.destroy(), upstream.destroy()))
    })
    servers.push(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const url = new URL(POSTGRES_URL)
    url.hostname = '127.0.0.1'
    url.port = String((server.address() as AddressInfo).port)
    return { url: url.toString(), cuts: () => cut }
  }

  it('a connection cut during its array-types query fails that connection, with no unhandled rejection; the next one works', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    const proxy = await cutAtTypesQuery()
    const sql = postgres(proxy.url, { max: 1, onnotice: () => {} })
    try {
      // The driver connects again and runs the statement there (or refuses it): either way it settles.
      await sql`select 1 as one`.catch(() => {})
      expect(proxy.cuts()).toBe(1)
      expect((await sql`select 2 as two`)[0].two).toBe(2)
      // Node reports an unhandled rejection once the microtasks of the turn it happened in have run:
      // the cut was turns ago; one more turn settles any doubt.
      await new Promise((resolve) => setImmediate(resolve))
      expect(unhandled.map(String)).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
      await sql.end({ timeout: 1 })
    }
  })
})
