/**
 * Diagnostic (`npx tsx bench/diagnostics/append-steps-cpu.ts [statements] [events]`): the
 * database backend's CPU per step batch of `a2_append_steps_many` at 1, 4 and 16 batches a
 * statement, alternated in one run: what a batch costs and what a statement (its commit)
 * costs. Each batch is `events` chunk events (figure 2 at 100 streams: ~7 tokens joined
 * into one event), fenced by its session's ACTIVE job and naming its run, as `generate`
 * appends them. CPU is the backend's own (utime + stime from /proc, 10 ms ticks), so the
 * client's work and the time waited for the WAL flush are out; the NOTIFYs go to a channel
 * nobody listens on. 2026-12-01, load ~9 from other work: 500, 130 and 106 µs a batch.
 */
import postgres from 'postgres'
import { createBenchDb } from '../lib/db'
import { ticksOfPid } from '../lib/machine'

const [statements = 2_000, eventsPer = 1] = process.argv.slice(2).map(Number)
const SIZES = [1, 4, 16]
const SESSIONS = 100

const db = await createBenchDb()
const client = postgres(db.url, { max: 1, onnotice: () => {} })
try {
  const sessions: Array<{ id: string; job: number }> = []
  for (let i = 0; i < SESSIONS; i++) {
    const id = `s${String(i).padStart(3, '0')}`
    await client`insert into a2_sessions (id, owner, head) values (${id}, 'bench', 1)`
    await client`insert into a2_events (session_id, index, id, type, payload) values (${id}, 0, 'g', 'generate', '{}'::jsonb)`
    const [job] = await client<{ id: string }[]>`
      insert into a2_jobs (session_id, event_index, event_id, consumer, max_attempts, attempt, status)
      values (${id}, 0, 'g', 'generate', 3, 1, 'ACTIVE') returning id`
    sessions.push({ id, job: Number(job.id) })
  }
  const [{ pid }] = await client<{ pid: number }[]>`select pg_backend_pid() as pid`
  const ticks = () => ticksOfPid(pid) ?? Number.NaN
  let n = 0
  const payload = (batchesPer: number) => {
    const batches = Array.from({ length: batchesPer }, () => {
      const s = sessions[n++ % SESSIONS]
      const events = Array.from({ length: eventsPer }, (_, k) => ({
        id: crypto.randomUUID(),
        type: 'chunk',
        payload: { of: 'g', attempt: 1, delta: ` token${n}-${k} and a few more words of text` },
      }))
      return { s: s.id, j: s.job, a: 1, r: ['g'], e: events }
    })
    return JSON.stringify(batches)
  }
  const run = async (batchesPer: number, count: number) => {
    const t0 = ticks()
    for (let i = 0; i < count; i++) {
      const rows = await client.unsafe(`select * from a2_append_steps_many($1::text::jsonb, 'a2_diag_nobody')`, [payload(batchesPer)], {
        prepare: true,
      })
      if (rows.length !== batchesPer || rows.some((r) => r.o_refused !== null)) throw new Error(JSON.stringify(rows))
    }
    return ((ticks() - t0) * 10_000) / (count * batchesPer) // µs per batch
  }
  await run(4, 200) // the plan and the function's compile
  const results = new Map<number, number[]>(SIZES.map((size) => [size, []]))
  const rounds = 6
  for (let r = 0; r < rounds; r++) for (const size of SIZES) results.get(size)!.push(await run(size, Math.ceil(statements / rounds / size)))
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  console.log(`backend CPU per batch of ${eventsPer} event(s), µs (median of ${rounds} rounds; rounds), ~${statements} batches a size:`)
  for (const [size, v] of results)
    console.log(`  ${String(size).padStart(2)} a statement: ${median(v).toFixed(0)}  [${v.map((x) => x.toFixed(0)).join(', ')}]`)
} finally {
  await client.end({ timeout: 2 })
  await db.drop()
}
