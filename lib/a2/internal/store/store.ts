/**
 * The store: a drizzle database on either driver (postgres-js or PGlite) behind one type,
 * plus the one LISTEN connection a process holds. Everything in a2 talks to a Store.
 * Opening a store creates nothing: `migrate(store)` (migrate.ts) makes a2's tables.
 */
import { sql, type SQL } from 'drizzle-orm'
import { PgDialect, type PgDatabase, type PgQueryResultHKT } from 'drizzle-orm/pg-core'
import type { ParameterOrJSON, Sql, UnsafeQueryOptions } from 'postgres'

const dialect = new PgDialect()

export type Db = PgDatabase<PgQueryResultHKT, Record<string, never>>
/** A database or a transaction: every statement helper accepts either. */
export type Executor = Pick<Db, 'execute'>

export interface Store {
  readonly kind: 'postgres' | 'pglite'
  readonly db: Db
  /** Subscribes to a NOTIFY channel. Postgres: one dedicated connection per store, shared by every channel. */
  /**
   * LISTENs on `channel`. `onRelisten` is called each time a lost LISTEN connection is taken
   * again: what was notified meanwhile reached nobody here.
   */
  listen(channel: string, onPayload: (payload: string) => void, onRelisten?: () => void): Promise<() => Promise<void>>
  /**
   * Two statements on one connection, the second sent right behind the first without waiting for
   * its answer (pipelined), each its own transaction: the database runs the second as soon as the
   * first has committed, whatever this process's event loop is doing. The chunks' group commit
   * sends its announcement so (log/step-hints.ts). Absent (PGlite, a wrapped test store): the
   * caller sends the second after the first's answer.
   */
  inOrder?<Row>(first: SQL, second: SQL): { first: Promise<Row[]>; second: Promise<unknown> }
  /**
   * Liveness (liveness.ts): holds `key` for as long as this process lives, so others can tell
   * from the database that it died. Absent (a wrapped test store): leases alone decide.
   */
  holdLifeLock?(key: number): Promise<LifeLock | undefined>
  /** SQL that is true when the process that held `ownerKey` is gone. */
  ownerGone?(ownerKey: SQL): SQL
  close(): Promise<void>
}

export interface LifeLock {
  /** How long the lock has been held without a break; undefined while it is not (reconnecting). */
  heldForMs(): number | undefined
  release(): Promise<void>
}

/** pg_advisory_lock(LIFE_LOCK_CLASS, key): the first half of every liveness lock's two-int key ("a2"). */
export const LIFE_LOCK_CLASS = 0x6132
/** How often a held liveness connection is checked. */
const LIFE_LOCK_CHECK_MS = 500
/** How often a lost one is taken again: the lock is back within ~250 ms of the store answering. */
const LIFE_LOCK_RETAKE_MS = 250
/** A check that has not answered by then counts as a lost lock (a hung connection is replaced). */
const LIFE_LOCK_TIMEOUT_MS = 1_000

/**
 * Seconds before postgres-js connects again (see openPostgresStore): at once after a connection
 * that closed cleanly (a killed backend: the liveness lock is back before anyone can look twice,
 * drain.ts), 50–100 ms after each failed connect (a server still down).
 */
const reconnectBackoff = (failures: number) => (failures === 0 ? 0 : 0.05 + Math.random() * 0.05)

/** Rows of a raw statement, whichever driver ran it (postgres-js returns an array, PGlite `{ rows }`). */
export async function query<Row = Record<string, unknown>>(executor: Executor, statement: SQL): Promise<Row[]> {
  const result = (await executor.execute(statement)) as unknown
  return (Array.isArray(result) ? result : (result as { rows: Row[] }).rows) as Row[]
}

export async function openPostgresStore(url: string, options: { max?: number; onNotice?: (n: unknown) => void } = {}): Promise<Store> {
  const { default: postgres } = await import('postgres')
  const { drizzle } = await import('drizzle-orm/postgres-js')
  const client = postgres(url, {
    // 10 connections: enough for the embedded worker, SSE reads and pushes on 2 cores;
    // more only queues in Postgres. The LISTEN connection is separate (postgres-js reserves one).
    max: options.max ?? 10,
    onnotice: options.onNotice ?? (() => {}),
    // Fail a statement instead of hanging forever when the server is gone; the lease
    // clock, not this timeout, is what aborts runs.
    connect_timeout: 5,
    // Between reconnects to a server that refused one: 50–100 ms. postgres-js's default grows
    // 3× a failure to 20 s, so a pool that failed six times in a 3 s restart waited another ~7 s
    // after Postgres answered again; a refused connect costs the server nothing.
    backoff: reconnectBackoff,
  })
  const db = drizzle(preparedStatements(client)) as unknown as Db
  const raw = (connection: Sql, statement: SQL) => {
    const { sql: text, params } = dialect.sqlToQuery(statement)
    // .then starts it: both are queued on the connection before either answers.
    return connection.unsafe(text, params as ParameterOrJSON<never>[], { prepare: true }).then((rows) => rows)
  }
  return {
    kind: 'postgres',
    db,
    inOrder<Row>(first: SQL, second: SQL) {
      const reserved = client.reserve()
      const sent = reserved.then((connection) => {
        const pair = { first: raw(connection, first), second: raw(connection, second) }
        void Promise.allSettled([pair.first, pair.second]).then(() => connection.release())
        return pair
      })
      const after = sent.then((pair) => pair.second)
      // A dead connection rejects both with one error; a caller that stops at the first's failure
      // never looks at the second (batched-appends.ts), and Node would end the process on it.
      after.catch(() => {})
      return { first: sent.then((pair) => pair.first as unknown as Promise<Row[]>), second: after }
    },
    async listen(channel, onPayload, onRelisten) {
      // postgres-js calls onlisten on the first LISTEN and again after each reconnect.
      let listened = false
      const request = await client.listen(channel, onPayload, () => {
        if (listened) onRelisten?.()
        listened = true
      })
      return () => request.unlisten()
    },
    holdLifeLock: (key) =>
      holdAdvisoryLock(
        (onclose) =>
          postgres(url, {
            max: 1,
            idle_timeout: 0,
            max_lifetime: 0,
            fetch_types: false,
            connect_timeout: 2,
            backoff: reconnectBackoff,
            onnotice: () => {},
            onclose,
          }),
        key,
      ),
    // pg_locks shows an advisory lock's two int4 keys as classid and objid (objsubid 2).
    ownerGone: (ownerKey) =>
      sql`${ownerKey} not in (select objid::bigint from pg_locks
                              where locktype = 'advisory' and classid = ${LIFE_LOCK_CLASS} and objsubid = 2 and granted)`,
    close: () => client.end({ timeout: 2 }),
  }
}

/**
 * A session-level advisory lock on a connection of its own (a one-connection client): Postgres
 * releases it the moment that connection closes — a killed process's socket closes with it.
 * Checked every 500 ms, and at once when the connection closes; each check is one statement
 * that holds the lock or takes it again (a new connection after a restart or a killed
 * backend), with a timeout: a check that does not answer in LIFE_LOCK_TIMEOUT_MS counts as
 * a lost lock and its client is replaced (a reserved pool connection, as this was before,
 * could wait forever for a connection during an outage, and the lock was never taken back).
 * Undefined when the key is taken by another live process (the caller picks another).
 */
async function holdAdvisoryLock(open: (onclose: () => void) => Sql, key: number): Promise<LifeLock | undefined> {
  let client: Sql | undefined
  let since: number | undefined
  let released = false
  let checking: Promise<boolean | undefined> | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  const lost = () => {
    since = undefined
    const old = client
    client = undefined
    void old?.end({ timeout: 0 }).catch(() => {})
  }
  // One statement: true when this connection holds the key (it took it before) or takes it now.
  const holdOrTake = (sql: Sql) =>
    sql<Array<{ held: boolean }>>`select case when exists (
        select 1 from pg_locks where pid = pg_backend_pid() and locktype = 'advisory'
          and classid = ${LIFE_LOCK_CLASS} and objid = ${key} and objsubid = 2 and granted)
      then true else pg_try_advisory_lock(${LIFE_LOCK_CLASS}, ${key}) end as held`
  const check = (): Promise<boolean | undefined> =>
    (checking ??= (async () => {
      if (released) return undefined
      const sql = (client ??= open(() => {
        // The connection closed (a restart, pg_terminate_backend): the lock went with it.
        if (client === sql) since = undefined
        if (!released) schedule(0)
      }))
      let timeout: ReturnType<typeof setTimeout> | undefined
      try {
        const answer = await Promise.race([
          holdOrTake(sql),
          new Promise<never>((_, reject) => (timeout = setTimeout(() => reject(new Error('liveness check timed out')), LIFE_LOCK_TIMEOUT_MS))),
        ])
        const held = answer[0]?.held === true
        if (held) since ??= performance.now()
        else lost()
        return held
      } catch {
        lost()
        return undefined // unreachable: try again on the next check
      } finally {
        clearTimeout(timeout)
        checking = undefined
      }
    })())
  const schedule = (ms = since === undefined ? LIFE_LOCK_RETAKE_MS : LIFE_LOCK_CHECK_MS) => {
    if (released) return
    clearTimeout(timer)
    timer = setTimeout(() => void check().finally(() => schedule()), ms)
    timer.unref?.() // the lock never keeps a process alive
  }
  if ((await check()) === false) {
    released = true
    return undefined
  }
  schedule()
  return {
    heldForMs: () => (since === undefined ? undefined : performance.now() - since),
    async release() {
      released = true
      clearTimeout(timer)
      await checking
      const sql = client
      client = undefined
      since = undefined
      // Closing the connection releases the lock.
      await sql?.end({ timeout: 1 }).catch(() => {})
    },
  }
}

/**
 * drizzle sends every statement with `prepare: false`, and postgres-js sends an unnamed
 * statement that has parameters in two round trips (Parse + Describe, wait, then Bind +
 * Execute), holding the connection out of its pipeline meanwhile. Named statements take
 * one round trip after a connection's first use and pipeline. 2,000 parameterised selects
 * on one connection: 0.18 → 0.09 ms each in
 * sequence, 0.14 → 0.012 ms each when concurrent; at 100 streams the two round trips left
 * every connection waiting on the worker's event loop and chunk appends queued ~100 ms.
 *
 * Each distinct statement text becomes a plan in every connection's backend until
 * postgres-js recycles it (every 30–60 min), so only the first MAX_PREPARED_TEXTS texts
 * are prepared. a2's statements have a fixed text or one per list length up to a push's
 * 20 events; lists of any length (the bus poll's tailed sessions) are sent as one jsonb.
 */
const MAX_PREPARED_TEXTS = 500

function preparedStatements<Client extends Sql>(client: Client, texts = new Set<string>()): Client {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'unsafe') {
        return (text: string, parameters?: ParameterOrJSON<never>[], options?: UnsafeQueryOptions) => {
          if (texts.size < MAX_PREPARED_TEXTS) texts.add(text)
          return target.unsafe(text, parameters, { ...options, prepare: texts.has(text) })
        }
      }
      // A transaction's (or savepoint's) own client prepares too, from the same budget.
      if (property === 'begin' || property === 'savepoint') {
        return (...args: unknown[]) => {
          const fn = args.pop() as (tx: Sql) => unknown
          const open = Reflect.get(target, property) as (...a: unknown[]) => unknown
          return open.apply(target, [...args, (tx: Sql) => fn(preparedStatements(tx, texts))])
        }
      }
      return Reflect.get(target, property, receiver)
    },
  })
}

export async function openPgliteStore(options: { dataDir?: string } = {}): Promise<Store> {
  const { PGlite } = await import('@electric-sql/pglite')
  const { drizzle } = await import('drizzle-orm/pglite')
  const { preparedPglite } = await import('./pglite-prepared')
  if (options.dataDir) (await import('node:fs')).mkdirSync(options.dataDir, { recursive: true })
  const { types } = await import('@electric-sql/pglite')
  // PGlite's own bytea serializer and parser go through a JS string per byte: a 10 MB file's
  // upload took 5.7-7.3 s, 1.8-3.0 s with Buffer's hex codec (bench/README.md, figure 15).
  const pg = await PGlite.create(options.dataDir, {
    serializers: { [types.BYTEA]: (x: Uint8Array) => `\\x${Buffer.from(x.buffer, x.byteOffset, x.byteLength).toString('hex')}` },
    parsers: { [types.BYTEA]: (x: string) => Buffer.from(x.slice(2), 'hex') },
  })
  const database = drizzle(preparedPglite(pg))
  // One process owns a PGlite database: the keys held here are the live ones, and a key
  // left in a row by an earlier process (a dev-server restart) belongs to a dead one.
  const liveKeys = new Set<number>()
  return {
    kind: 'pglite',
    db: database as unknown as Db,
    listen: (channel, onPayload) => pg.listen(channel, onPayload),
    async holdLifeLock(key) {
      if (liveKeys.has(key)) return undefined
      liveKeys.add(key)
      const since = performance.now()
      return { heldForMs: () => performance.now() - since, release: async () => void liveKeys.delete(key) }
    },
    ownerGone: (ownerKey) => sql`${ownerKey} not in (select jsonb_array_elements_text(${JSON.stringify([...liveKeys].map(String))}::jsonb)::int)`,
    close: () => pg.close(),
  }
}

/** The SQLSTATE of a statement the database refused, looked for through drizzle's wrapping (it keeps the driver's error as its cause). */
export function sqlState(error: unknown): string | undefined {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 3; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return e.code
  }
  return undefined
}
