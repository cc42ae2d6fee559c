/**
 * A database outage for the model-based tests, the same on PGlite and on Postgres: the
 * database goes away for every process of a sequence at once (workers, pushes, the
 * operator), at a statement a command chose, and comes back when another command says so.
 *
 * It is modeled where the runtime meets the driver (every `execute`, every statement inside a
 * transaction, and its commit), not below it: PGlite runs in the test's own process, so
 * nothing can cut its connection, and on Postgres a real restart (or terminating the test
 * database's backends) would also take down the connection the harness checks invariants
 * through, at a moment no seed could replay. What a dropped connection does to a statement
 * is what is modeled, each as the driver would report it:
 *   - refused: the statement never reached the server (nothing happened);
 *   - lost: the statement ran, and committed if it was not inside a transaction, but its
 *     answer never came back (the caller sees an error for a write that landed);
 *   - inside a transaction, any failure before the commit rolls the whole of it back; a lost
 *     commit committed.
 */
import type { Store } from '@/lib/a2/server'

export type Fault = 'refused' | 'lost'

/** The switch a sequence's commands throw: shared by every store of the sequence (one database). */
export class OutageSwitch {
  /** The database is away: every statement is refused. */
  down = false
  /** Statements still let through before the outage begins (undefined: none is coming). */
  private countdown?: number
  private first: Fault = 'refused'
  /** Statements that failed, by fault: the generator must reach both or it proves nothing about them. */
  readonly faults = { refused: 0, lost: 0 }

  /** The database goes away after `after` more statements; the one it goes away under fails as `first`. */
  arm(after: number, first: Fault): void {
    if (this.down) return
    this.countdown = after
    this.first = first
  }

  /** The database is back: statements go through again. */
  restore(): void {
    this.down = false
    this.countdown = undefined
  }

  get armed(): boolean {
    return this.countdown !== undefined
  }

  /** Decides the fate of the next statement: undefined (it goes through) or its fault. */
  next(): Fault | undefined {
    if (this.down) return this.count('refused')
    if (this.countdown === undefined) return undefined
    if (this.countdown > 0) {
      this.countdown--
      return undefined
    }
    this.countdown = undefined
    this.down = true
    return this.count(this.first)
  }

  private count(fault: Fault): Fault {
    this.faults[fault]++
    return fault
  }
}

/** What a driver throws when its connection dropped: the runtime must treat it as any failed statement. */
export class ConnectionLost extends Error {
  readonly code = 'CONNECTION_CLOSED'
  constructor(fault: Fault, text: string) {
    super(`${fault === 'refused' ? 'connection refused' : 'connection lost before the answer'} (simulated outage): ${text.slice(0, 60)}`)
  }
}

type Execute = (statement: never) => Promise<unknown>
type Transaction = (fn: (tx: never) => Promise<unknown>, config?: never) => Promise<unknown>

/** The same database behind a Store whose statements fail while `outage` says the database is away. */
export function outageStore(store: Store, outage: OutageSwitch): Store {
  const guarded = (execute: Execute, label: string): Execute => {
    return async (statement) => {
      const fault = outage.next()
      if (fault === 'refused') throw new ConnectionLost(fault, label)
      const result = await execute(statement)
      if (fault === 'lost') throw new ConnectionLost(fault, label)
      return result
    }
  }
  const wrapTx = (tx: object): object =>
    new Proxy(tx, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver)
        if (prop === 'execute') return guarded((value as Execute).bind(target), 'in a transaction')
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
  const db = new Proxy(store.db, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver)
      if (prop === 'execute') return guarded((value as Execute).bind(target), 'a statement')
      if (prop === 'transaction') {
        return async (fn: (tx: never) => Promise<unknown>, config?: never) => {
          // A begin that fails opens nothing, whatever became of its bytes.
          if (outage.next()) throw new ConnectionLost('refused', 'begin')
          let commit: Fault | undefined
          const result = await (value as Transaction).call(
            target,
            async (tx) => {
              const out = await fn(wrapTx(tx as object) as never)
              // The commit is a statement too: refused, it never reached the server (rolled back).
              commit = outage.next()
              if (commit === 'refused') throw new ConnectionLost('refused', 'commit')
              return out
            },
            config,
          )
          if (commit === 'lost') throw new ConnectionLost('lost', 'commit')
          return result
        }
      }
      return typeof value === 'function' ? value.bind(target) : value
    },
  }) as Store['db']
  return {
    kind: store.kind,
    db,
    listen: (channel, onPayload) => store.listen(channel, onPayload),
    close: async () => {},
  }
}
