/**
 * Prepared statements on PGlite, as the Postgres store has them (store.ts). PGlite's `query`
 * parses and plans its text on every call, and sends Parse, Describe, Bind, Describe, Execute
 * and Sync as six entries into the WASM, each awaited. Here a text is parsed once as a named
 * statement (its parameter types kept), and each call after sends Bind, Describe, Execute and
 * Sync as one entry. In-process, PGlite with a2's tables (five runs on a shared machine): the worker's claim 1.9–4.1 ms → 0.2–0.5 ms a call (planning
 * it was 1.4–3.2 ms of WASM every time), a one-row select as drizzle sends it 0.5–1.4 → 0.15–0.21 ms.
 * PGlite runs on the process's one event loop, so that was loop time every other request waited for.
 *
 * Everything else is PGlite's own: its mutexes (one statement at a time, none beside an open
 * transaction), its type serializers and parsers, its notifications, its errors.
 */
import type { PGlite, QueryOptions, Results, Transaction } from '@electric-sql/pglite'
import { parse as pgParse, protocol } from '@electric-sql/pglite'

/** Distinct texts kept as named statements (a2's have a fixed text or one per list length): past it, PGlite's own path. */
const MAX_PREPARED_TEXTS = 500

interface Prepared {
  name: string
  /** The parameters' type oids, from the statement's Describe: what PGlite's serializers are chosen by. */
  types: number[]
}

type Query = <T>(text: string, params?: unknown[], options?: QueryOptions) => Promise<Results<T>>

/** The PGlite client drizzle is given: `query` (and a transaction's) goes through named statements. */
export function preparedPglite(pg: PGlite): PGlite {
  const statements = new Map<string, Prepared>()
  let named = 0
  const original = pg.query.bind(pg) as Query

  const run = async <T>(text: string, params: unknown[], options: QueryOptions | undefined, inTransaction: boolean): Promise<Results<T>> => {
    const statement = statements.get(text) ?? (await prepare(text, options))
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null
      const oid = statement.types[i]
      const serialize = options?.serializers?.[oid] ?? pg.serializers[oid]
      return serialize ? serialize(value) : String(value)
    })
    let messages
    try {
      messages = await pg.execProtocolStream(
        join([
          protocol.serialize.bind({ statement: statement.name, values: values as string[] }),
          protocol.serialize.describe({ type: 'P' }),
          protocol.serialize.execute({}),
          protocol.serialize.sync(),
        ]),
        { syncToFs: false, onNotice: options?.onNotice },
      )
    } catch (error) {
      throw withQuery(error, text, params, options)
    }
    if (!inTransaction) await pg.syncToFs()
    return pgParse.parseResults(messages, parsersFor(options), { ...options, parsers: undefined })[0] as Results<T>
  }

  /** Parses the text as a named statement; kept only once Postgres accepted it. */
  const prepare = async (text: string, options: QueryOptions | undefined): Promise<Prepared> => {
    const name = `a2_${named++}`
    try {
      const described = await pg.execProtocolStream(
        join([protocol.serialize.parse({ name, text }), protocol.serialize.describe({ type: 'S', name }), protocol.serialize.sync()]),
        { syncToFs: false },
      )
      const statement = { name, types: pgParse.parseDescribeStatementResults(described) }
      statements.set(text, statement)
      return statement
    } catch (error) {
      throw withQuery(error, text, [], options)
    }
  }

  // drizzle passes its own parsers with every statement (dates and intervals kept as text), and
  // PGlite copies every parser it has (a few hundred) into a new object per statement to add
  // them. Layered on PGlite's parsers instead: a lookup falls through to them.
  const layered = new WeakMap<object, PGlite['parsers']>()
  const parsersFor = (options: QueryOptions | undefined): PGlite['parsers'] => {
    if (!options?.parsers) return pg.parsers
    let parsers = layered.get(options.parsers)
    if (!parsers) layered.set(options.parsers, (parsers = Object.assign(Object.create(pg.parsers) as PGlite['parsers'], options.parsers)))
    return parsers
  }

  // Statements without parameters (DDL, BEGIN, a savepoint), with a blob, or with parameter types of their own (a
  // statement is kept by its text alone) keep PGlite's path; drizzle sends neither.
  const fast = (text: string, params: unknown[] | undefined, options: QueryOptions | undefined) =>
    params !== undefined &&
    params.length > 0 &&
    !options?.blob &&
    !options?.paramTypes &&
    (statements.has(text) || statements.size < MAX_PREPARED_TEXTS)

  const query: Query = async (text, params, options) => {
    if (!fast(text, params, options)) return original(text, params, options)
    await pg._checkReady()
    return pg._runExclusiveTransaction(() => pg._runExclusiveQuery(() => run(text, params!, options, false)))
  }

  const transaction = <T>(callback: (tx: Transaction) => Promise<T>): Promise<T> =>
    pg.transaction((tx) =>
      callback(
        new Proxy(tx, {
          get(target, property, receiver) {
            if (property !== 'query') return Reflect.get(target, property, receiver)
            const txQuery: Query = async (text, params, options) => {
              if (!fast(text, params, options)) return target.query(text, params, options)
              if (target.closed) throw new Error('Transaction is closed')
              // The transaction holds PGlite's transaction mutex already: only the query mutex.
              return pg._runExclusiveQuery(() => run(text, params!, options, true))
            }
            return txQuery
          },
        }),
      ),
    )

  return new Proxy(pg, {
    get(target, property) {
      if (property === 'query') return query
      if (property === 'transaction') return transaction
      // PGlite's methods use private fields: they must run on PGlite itself, not on this proxy.
      const value = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

function join(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

/** What PGlite's own `query` adds to a database error: the statement it came from. */
function withQuery(error: unknown, text: string, params: unknown[], options: QueryOptions | undefined): unknown {
  if (error && typeof error === 'object' && 'severity' in error) Object.assign(error, { query: text, params, queryOptions: options })
  return error
}
