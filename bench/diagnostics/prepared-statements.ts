/**
 * Diagnostic (`npx tsx bench/diagnostics/prepared-statements.ts`): what drizzle's
 * `prepare: false` costs on postgres-js. An unnamed statement with parameters goes out as
 * Parse + Describe, waits for the answer, then Bind + Execute: two round trips, and the
 * connection cannot pipeline meanwhile. A named (prepared) statement is one round trip
 * after the connection's first use, and pipelines. lib/a2/internal/store.ts prepares.
 * Runs against BENCH_DATABASE_URL || TEST_DATABASE_URL || the local `test` database; it
 * only selects, so it needs no database of its own.
 */
import postgres from 'postgres'

const url = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const client = postgres(url, { max: 1, onnotice: () => {} })
const N = 2_000

async function perQuery(prepare: boolean, concurrent: boolean): Promise<number> {
  const one = (i: number) => client.unsafe('select $1::int + 1 as x', [i], { prepare })
  const started = performance.now()
  if (concurrent) await Promise.all(Array.from({ length: N }, (_, i) => one(i)))
  else for (let i = 0; i < N; i++) await one(i)
  return (performance.now() - started) / N
}

try {
  await perQuery(true, false) // warm-up: the connection, the statement
  for (const concurrent of [false, true]) {
    const unnamed: number[] = []
    const named: number[] = []
    for (let trial = 0; trial < 3; trial++) {
      unnamed.push(await perQuery(false, concurrent))
      named.push(await perQuery(true, concurrent))
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1]
    console.log(
      `${concurrent ? `${N} at once` : 'one at a time'} on one connection: prepare:false ${median(unnamed).toFixed(3)} ms/query, ` +
        `prepare:true ${median(named).toFixed(3)} ms/query (${(median(unnamed) / median(named)).toFixed(1)}×), median of 3`,
    )
  }
} finally {
  await client.end()
}
