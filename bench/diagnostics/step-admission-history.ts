/**
 * Diagnostic (`npx tsx bench/diagnostics/step-admission-history.ts [history] [statements]`):
 * the database backend's CPU per chunk batch of `a2_append_steps_many` in sessions that
 * already hold `history` finished runs each (an answer is a run), with the function as
 * migration 0002 made it and as 0012 makes it, alternated round by round in one run on one
 * database (each round re-creates the function it measures). 0002 looked a batch's run up
 * among all of its session's runs; 0012 finds it by key. Batches as `generate` sends them:
 * one chunk event, fenced by the session's ACTIVE job, naming its run; 4 batches a statement.
 * CPU is the backend's own (utime + stime from /proc, 10 ms ticks).
 */
import postgres from 'postgres'
import { createBenchDb } from '../lib/db'
import { ticksOfPid } from '../lib/machine'
import { MIGRATIONS } from '@/lib/a2/sql'
import { splitStatements } from '@/lib/a2/internal/split-sql'

const [history = 4_500, statements = 1_500] = process.argv.slice(2).map(Number)
const SESSIONS = 20
const PER_STATEMENT = 4
const ROUNDS = 6
const versions = { '0002': MIGRATIONS.find((m) => m.id === 2)!.sql, '0012': MIGRATIONS.find((m) => m.id === 12)!.sql }

const db = await createBenchDb()
const client = postgres(db.url, { max: 1, onnotice: () => {} })
try {
  const sessions: Array<{ id: string; job: number; run: string }> = []
  for (let i = 0; i < SESSIONS; i++) {
    const id = `s${String(i).padStart(3, '0')}`
    const run = `g${history}`
    await client`insert into a2_sessions (id, owner, head) values (${id}, 'bench', ${history + 1})`
    await client`insert into a2_events (session_id, index, id, type, payload)
                 select ${id}, g, 'g' || g, 'generate', '{}'::jsonb from generate_series(0, ${history}) g`
    await client`insert into a2_jobs (session_id, event_index, event_id, consumer, max_attempts, attempt, status)
                 select ${id}, g, 'g' || g, 'generate', 3, 1, 'COMPLETED' from generate_series(0, ${history - 1}) g`
    const [job] = await client<{ id: string }[]>`
      insert into a2_jobs (session_id, event_index, event_id, consumer, max_attempts, attempt, status)
      values (${id}, ${history}, ${run}, 'generate', 3, 1, 'ACTIVE') returning id`
    sessions.push({ id, job: Number(job.id), run })
  }
  await client`analyze`
  const [{ pid }] = await client<{ pid: number }[]>`select pg_backend_pid() as pid`
  const ticks = () => ticksOfPid(pid) ?? Number.NaN
  let n = 0
  const payload = () =>
    JSON.stringify(
      Array.from({ length: PER_STATEMENT }, () => {
        const s = sessions[n++ % SESSIONS]
        return {
          s: s.id,
          j: s.job,
          a: 1,
          r: [s.run],
          e: [{ id: crypto.randomUUID(), type: 'chunk', payload: { of: s.run, attempt: 1, delta: ` token${n}` } }],
        }
      }),
    )
  const run = async (count: number) => {
    const t0 = ticks()
    for (let i = 0; i < count; i++) {
      const rows = await client.unsafe(`select * from a2_append_steps_many($1::text::jsonb, 'a2_diag_nobody')`, [payload()], { prepare: true })
      if (rows.some((r) => r.o_refused !== null)) throw new Error(JSON.stringify(rows))
    }
    return ((ticks() - t0) * 10_000) / (count * PER_STATEMENT) // µs per batch
  }
  const results: Record<string, number[]> = { '0002': [], '0012': [] }
  for (let round = -1; round < ROUNDS; round++) {
    for (const [name, sql] of Object.entries(versions)) {
      for (const statement of splitStatements(sql)) await client.unsafe(statement)
      const us = await run(Math.ceil(statements / ROUNDS / PER_STATEMENT))
      if (round >= 0) results[name].push(us) // round -1 warms the plans and the compile
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  console.log(`backend CPU per chunk batch, ${history} finished runs a session, µs (median of ${ROUNDS} alternated rounds; rounds):`)
  for (const [name, v] of Object.entries(results)) console.log(`  ${name}: ${median(v).toFixed(0)}  [${v.map((x) => x.toFixed(0)).join(', ')}]`)
} finally {
  await client.end({ timeout: 2 })
  await db.drop()
}
