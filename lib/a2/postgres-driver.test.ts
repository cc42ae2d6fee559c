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
import { sql as drizzleSql } from 'drizzle-orm'
import { POSTGRES_URL } from './test-kit/db'
import { openPostgresStore } from './internal/store/store'
import { waitUntil } from './test-kit/runtime'

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

  it('a pair of statements sent in order whose connection dies: the caller that stops at the first failure leaves no unhandled rejection', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    const store = await openPostgresStore(POSTGRES_URL)
    const admin = postgres(POSTGRES_URL, { max: 1, onnotice: () => {} })
    const tag = `inorder_${process.pid}_${Date.now()}`
    try {
      // The step statement's caller awaits the first and, when it fails, never looks at the second (batched-appends.ts).
      const { first } = store.inOrder!(drizzleSql.raw(`select pg_sleep(5), '${tag}' as tag`), drizzleSql`select 1 as second`)
      await waitUntil(
        async () => (await admin`select 1 from pg_stat_activity where query like ${`%${tag}%`} and pid <> pg_backend_pid()`).length > 0 || undefined,
        'the first statement to run',
      )
      await admin`select pg_terminate_backend(pid) from pg_stat_activity where query like ${`%${tag}%`} and pid <> pg_backend_pid()`
      await expect(first).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' })
      await new Promise((resolve) => setImmediate(resolve))
      expect(unhandled.map(String)).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
      await admin.end({ timeout: 1 })
      await store.close()
    }
  })
})
