/**
 * Diagnostic (`npx tsx bench/diagnostics/append-round-trips.ts`): why a chunk append is slow.
 *
 * The library's append is one transaction of ~8 statements, each a client round trip,
 * holding the session's row lock throughout. This runs the same chunkWriter producers as
 * figure 3 over (a) the library's server-side append and (b) a prototype that runs the
 * same statements — session lock, fence, admission check, index assignment, insert, head
 * update, NOTIFY — inside one plpgsql function: one round trip. The function lives only in
 * the throw-away database this creates; it is evidence for a proposed change to
 * lib/a2/internal/log.ts, not code to copy as is.
 */
import { sql } from 'drizzle-orm'
import { performance } from 'node:perf_hooks'
import { createServer } from '@/lib/a2/server'
import { chat } from '@/lib/chat/contract'
import { chunkWriter } from '@/lib/chat/chunk-writer'
import { createBenchDb, openBenchStore, rows } from '../lib/db'
import { sleep } from '../lib/time'
import { summarize } from '../lib/stats'

const FUNCTION = `
create or replace function a2_append_chunks(p_session text, p_job bigint, p_attempt int, p_of text, p_payloads jsonb)
returns int language plpgsql as $$
declare v_head int; v_n int := jsonb_array_length(p_payloads);
begin
  select head into v_head from a2_sessions where id = p_session for update;
  if not found then raise exception 'no such session'; end if;
  update a2_jobs set updated_at = now() where id = p_job and attempt = p_attempt and status in ('ACTIVE', 'CANCELLING');
  if not found then raise exception 'fenced'; end if;
  perform 1 from a2_jobs where session_id = p_session and event_id = p_of and status in ('CANCELLING', 'CANCELLED') limit 1 for share;
  if found then raise exception 'run_cancelled'; end if;
  insert into a2_events (session_id, index, id, type, payload)
    select p_session, v_head + (d.ord - 1)::int, gen_random_uuid()::text, 'chunk', d.payload
    from jsonb_array_elements(p_payloads) with ordinality as d(payload, ord);
  update a2_sessions set head = v_head + v_n, updated_at = now() where id = p_session;
  perform pg_notify('a2', json_build_object('s', p_session, 'h', v_head + v_n)::text);
  return v_head;
end $$`

const db = await createBenchDb()
const store = await openBenchStore('postgres', db.url)
const server = createServer({ contract: chat, consumers: [], store })

async function run(mode: 'library' | 'function', writers: number, windowMs: number): Promise<string> {
  const targets: Array<{ session: string; job: number }> = []
  for (let i = 0; i < writers; i++) {
    const { id } = await server.sessions.create('bench')
    await server.append(id, { id: 'g', type: 'generate', payload: { for: 'm' } })
    const [job] = await rows<{ id: string }>(
      store,
      sql`insert into a2_jobs (session_id, event_index, event_id, consumer, max_attempts, attempt) values (${id}, 0, 'g', 'x', 3, 1) returning id`,
    )
    targets.push({ session: id, job: Number(job.id) })
  }
  let committed = 0
  let transactions = 0
  const latencies: number[] = []
  const stopAt = performance.now() + windowMs
  await Promise.all(
    targets.map(async ({ session, job }) => {
      let pushed = 0
      let done = 0
      const writer = chunkWriter(async (deltas) => {
        const started = performance.now()
        const payloads = deltas.map((delta) => ({ of: 'g', attempt: 1, delta }))
        if (mode === 'library') {
          // The server-side append without a fence: one statement fewer than ctx.append's.
          await server.append(session, ...payloads.map((payload) => ({ type: 'chunk' as const, payload })))
        } else {
          await store.db.execute(sql`select a2_append_chunks(${session}, ${job}, 1, 'g', ${JSON.stringify(payloads)}::jsonb)`)
        }
        latencies.push(performance.now() - started)
        done += deltas.length
        if (performance.now() <= stopAt) {
          committed += deltas.length
          transactions++
        }
      })
      while (performance.now() < stopAt) {
        if (pushed - done < 256) writer.push(`d${pushed++} `)
        await sleep(1)
      }
      await writer.flush()
    }),
  )
  const tx = summarize(latencies)
  return (
    `${mode.padEnd(8)} ${String(writers).padStart(2)} writers: ${Math.round((committed * 1000) / windowMs)} events/s, ` +
    `${Math.round((transactions * 1000) / windowMs)} appends/s, ${(committed / Math.max(1, transactions)).toFixed(1)} events/append, ` +
    `append p50 ${tx.p50.toFixed(1)} ms p99 ${tx.p99.toFixed(1)} ms`
  )
}

try {
  await store.db.execute(sql.raw(FUNCTION))
  for (const writers of [1, 50]) {
    for (const mode of ['library', 'function', 'library', 'function'] as const) console.log(await run(mode, writers, 2_000))
  }
} finally {
  await store.close()
  await db.drop()
}
