import { PgDialect } from 'drizzle-orm/pg-core'
import type { SQL } from 'drizzle-orm'
import type { Store } from '@/lib/a2/server'

const dialect = new PgDialect()

/**
 * A store on the same database that counts the statements sent through it (raw ones and
 * selects); with `only`, the raw statements whose text matches it (the step statements, say,
 * without the notifications that announce them after their commit).
 */
export function countingStore(store: Store, only?: RegExp): Store & { readonly statements: number } {
  let statements = 0
  const counts = (property: string | symbol, args: unknown[]) =>
    !only || (property === 'execute' && only.test(dialect.sqlToQuery(args[0] as SQL).sql))
  const db = new Proxy(store.db, {
    get: (target, property, receiver) =>
      property === 'execute' || property === 'select'
        ? (...args: unknown[]) => {
            if (counts(property, args)) statements++
            return (Reflect.get(target, property) as (...a: unknown[]) => unknown).apply(target, args)
          }
        : Reflect.get(target, property, receiver),
  })
  return {
    ...store,
    // Every statement through `db`, where it is counted (Store.inOrder would send the step statements past it).
    inOrder: undefined,
    db,
    get statements() {
      return statements
    },
  }
}
