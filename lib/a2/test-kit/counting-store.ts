import type { Store } from '@/lib/a2/server'

/** A store on the same database that counts the statements sent through it (raw ones and selects). */
export function countingStore(store: Store): Store & { readonly statements: number } {
  let statements = 0
  const db = new Proxy(store.db, {
    get: (target, property, receiver) =>
      property === 'execute' || property === 'select'
        ? (...args: unknown[]) => {
            statements++
            return (Reflect.get(target, property) as (...a: unknown[]) => unknown).apply(target, args)
          }
        : Reflect.get(target, property, receiver),
  })
  return {
    ...store,
    db,
    get statements() {
      return statements
    },
  }
}
