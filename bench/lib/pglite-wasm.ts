/**
 * PGlite's time inside its WASM: every statement runs through `execProtocolRawSync`, on the
 * process's one event loop. Diagnostics wrap it once to see how much of the loop it takes.
 */
import { performance } from 'node:perf_hooks'
import { PGlite } from '@electric-sql/pglite'

/** Calls `add` with the milliseconds of each synchronous call into PGlite's WASM, from now on. */
export function timePgliteWasm(add: (ms: number) => void): void {
  const proto = PGlite.prototype as unknown as { execProtocolRawSync(...args: unknown[]): unknown }
  const original = proto.execProtocolRawSync
  proto.execProtocolRawSync = function (this: unknown, ...args: unknown[]) {
    const t0 = performance.now()
    try {
      return original.apply(this, args)
    } finally {
      add(performance.now() - t0)
    }
  }
}
