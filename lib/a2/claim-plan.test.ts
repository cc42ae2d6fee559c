/**
 * The claim's plan behind 10k stuck lanes, on Postgres: each lane's head leased to a dead owner
 * for an hour with a job waiting behind it, and 100 runnable jobs of another consumer. The claim
 * (claimStatement, the very text the worker runs) must read the claimable index and walk neither
 * the waiting jobs (lane_blocked keeps them out of it) nor the leased heads (the index orders jobs
 * by when they are next free, so a range scan up to now() stops before them). A claim that walked
 * them would touch at least a buffer per stuck job (30,350 for these 10k lanes when waiting jobs
 * sat in the runnable index); the index's range scan reads 3.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import type { Store } from '@/lib/a2/server'
import { claimStatement } from './internal/runtime/jobs'
import { query } from './internal/store/store'
import { createTestDb, POSTGRES_URL, type TestDb } from './test-kit/db'

const STUCK_LANES = 10_000
/** Far below the buffer per stuck job (≥ 10,000) a claim that walked them would touch, far above the 3 the range scan reads. */
const MAX_BUFFERS = 1_000

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  'Shared Hit Blocks'?: number
  'Shared Read Blocks'?: number
  Plans?: PlanNode[]
}

function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)]
}

describe.skipIf(!POSTGRES_URL)('the claim behind 10k stuck lanes on postgres (set TEST_DATABASE_URL to run)', () => {
  let testDb: TestDb
  let store: Store

  beforeAll(async () => {
    testDb = await createTestDb('postgres')
    store = await testDb.open()
    const exec = (statement: string) => store.db.execute(sql.raw(statement))
    await exec(`insert into a2_sessions (id, owner) select 'stuck-' || g, 'test' from generate_series(1, ${STUCK_LANES}) g`)
    await exec(`insert into a2_jobs (session_id, event_index, event_id, consumer, lane, max_attempts, attempt, owner, lease_until, run_at)
      select 'stuck-' || g, 0, 'e0', 'laned', 'L', 3, 1, 'dead-owner', now() + interval '1 hour', now() - interval '1 minute' from generate_series(1, ${STUCK_LANES}) g
      union all
      select 'stuck-' || g, 1, 'e1', 'laned', 'L', 3, 0, null, null, now() - interval '1 minute' from generate_series(1, ${STUCK_LANES}) g`)
    await exec(`insert into a2_sessions (id, owner) select 'fresh-' || g, 'test' from generate_series(1, 100) g`)
    await exec(
      `insert into a2_jobs (session_id, event_index, event_id, consumer, lane, max_attempts) select 'fresh-' || g, 0, 'e0', 'plain', null, 3 from generate_series(1, 100) g`,
    )
    // The claim returns each claimed job's trigger event.
    await exec(`insert into a2_events (session_id, index, id, type, payload)
      select 'stuck-' || g, i, 'stuck-' || g || '-e' || i, 'job', '{}'::jsonb from generate_series(1, ${STUCK_LANES}) g, generate_series(0, 1) i
      union all
      select 'fresh-' || g, 0, 'fresh-' || g || '-e0', 'job', '{}'::jsonb from generate_series(1, 100) g`)
    await exec('analyze a2_jobs')
    await exec('analyze a2_events')
  })

  afterAll(async () => {
    await testDb?.drop()
  })

  it('reads the claimable index, walks no stuck job, and claims only runnable ones', async () => {
    const blocked = await query<{ n: number }>(store.db, sql`select count(*)::int as n from a2_jobs where lane_blocked`)
    expect(blocked[0].n).toBe(STUCK_LANES) // every job behind a stuck head waits outside the index

    const claim = claimStatement({ consumers: ['plain', 'laned'], owner: 'test', leaseMs: { plain: 30_000, laned: 30_000 }, limit: 16 })
    const [row] = await query<Record<string, unknown>>(store.db, sql`explain (analyze, buffers, costs off, format json) ${claim}`)
    const text = Object.values(row)[0]
    const [explained] = (typeof text === 'string' ? JSON.parse(text) : text) as Array<{ Plan: PlanNode }>
    const nodes = nodesOf(explained.Plan)

    const jobScans = nodes.filter((n) => n['Relation Name'] === 'a2_jobs' && n['Node Type'] !== 'ModifyTable')
    expect(jobScans.map((n) => n['Node Type'])).not.toContain('Seq Scan')
    const candidates = jobScans.find((n) => n['Index Name'] === 'a2_jobs_claimable')
    expect(candidates).toBeDefined()
    const buffers = (candidates!['Shared Hit Blocks'] ?? 0) + (candidates!['Shared Read Blocks'] ?? 0)
    expect(buffers).toBeLessThan(MAX_BUFFERS)

    const claimed = await query<{ consumer: string; n: number }>(
      store.db,
      sql`select consumer, count(*)::int as n from a2_jobs where owner = 'test' group by consumer`,
    )
    expect(claimed).toEqual([{ consumer: 'plain', n: 16 }])
  })
})
