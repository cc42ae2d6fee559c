import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createServer, type Store } from '@/lib/a2/server'
import { createTestDb, layers, type TestDb } from './test-kit/db'
import { testContract } from './test-kit/contract'
import { countingStore } from './test-kit/counting-store'
import { waitUntil } from './test-kit/runtime'
import { isA2Error } from '@/lib/a2'
import { query } from './internal/store/store'
import { sessionHintsSent } from './internal/log/step-hints'
import { sql } from 'drizzle-orm'

describe.each(layers)('the log on %s', (kind) => {
  let testDb: TestDb
  let store: Store
  let server: ReturnType<typeof createServer<typeof testContract>>

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    store = await testDb.open()
    server = createServer({ contract: testContract, consumers: [], store })
  })
  afterAll(async () => {
    await testDb.drop()
  })

  /** A server whose `generate` runs are cancelled by `cancelled` (no worker: its jobs stay unclaimed). */
  const serverWithGenerate = async () => {
    const gen = (await import('./internal/runtime/consumer'))
      .consumer({
        contract: testContract,
        name: 'generate',
        types: ['generate'],
        abortOn: ['cancelled'],
      })
      .run(async () => {})
    return createServer({ contract: testContract, consumers: [gen], store })
  }

  const countEvents = async (sessionId: string) =>
    (await query<{ n: number }>(store.db, sql`select count(*)::int as n from a2_events where session_id = ${sessionId}`))[0].n

  it('assigns gapless, unique indexes to 8 concurrent appenders × 500 events', async () => {
    const { id } = await server.sessions.create('u1')
    // Postgres: each appender on its own connection, so the row lock really arbitrates.
    const appenders =
      kind === 'postgres' ? await Promise.all(Array.from({ length: 8 }, () => testDb.open({ max: 1 }))) : Array.from({ length: 8 }, () => store)
    const servers = appenders.map((s) => createServer({ contract: testContract, consumers: [], store: s }))
    await Promise.all(
      servers.map(async (s, w) => {
        for (let i = 0; i < 500; i++) await s.append(id, { type: 'message', payload: { text: `w${w} e${i}` } })
      }),
    )
    const rows = await query<{ index: number }>(store.db, sql`select index from a2_events where session_id = ${id} order by index`)
    expect(rows).toHaveLength(4000)
    expect(rows.map((r) => r.index)).toEqual(Array.from({ length: 4000 }, (_, i) => i))
    // Each appender's own events stay in its order.
    const all = await server.read(id, 'u1', { limit: 4000 })
    for (let w = 0; w < 8; w++) {
      const mine = all.filter((e) => (e.payload as { text: string }).text.startsWith(`w${w} `))
      expect(mine.map((e) => (e.payload as { text: string }).text)).toEqual(Array.from({ length: 500 }, (_, i) => `w${w} e${i}`))
    }
  }, 120_000)

  it('never lets a tail see a later append before an earlier one still in its transaction', async () => {
    const { id } = await server.sessions.create('u1')
    await server.append(id, { type: 'message', payload: { text: 'before' } })
    const other = kind === 'postgres' ? createServer({ contract: testContract, consumers: [], store: await testDb.open({ max: 1 }) }) : server

    let release!: () => void
    let entered!: () => void
    const held = new Promise<void>((r) => (release = r))
    const inside = new Promise<void>((r) => (entered = r))
    // Append A holds its transaction (and the session's row lock) open.
    const { append: rawAppend } = await import('./internal/log/append')
    const a = rawAppend(store, server.routing, id, [{ type: 'message', payload: { text: 'A' } }], {
      within: async () => {
        entered()
        await held
      },
    })
    await inside
    let bDone = false
    const b = other.append(id, { type: 'message', payload: { text: 'B' } }).then((e) => {
      bDone = true
      return e
    })

    const seen: number[] = []
    const controller = new AbortController()
    const reader = (async () => {
      for await (const batch of await server.tail(id, 'u1', { after: 0, signal: controller.signal, pollMs: 20 })) {
        seen.push(...batch.map((e) => e.index))
        if (seen.length >= 2) break
      }
    })()
    if (kind === 'postgres') {
      // B's statement is queued behind A's row lock (a backend of this database waits on a Lock).
      await waitUntil(
        async () =>
          (
            await query<{ n: number }>(
              store.db,
              sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
            )
          )[0].n > 0,
        'B to wait on the row lock',
      )
      expect(bDone).toBe(false) // B waits on A's row lock
      expect(seen).toEqual([]) // and nothing is visible yet
    }
    release()
    const [[eventA], [eventB]] = await Promise.all([a.then((r) => r.events), b])
    await reader
    controller.abort()
    expect(eventA.index).toBe(1)
    expect(eventB.index).toBe(2)
    expect(seen).toEqual([1, 2])
  })

  it('makes a push with a client id idempotent: the repeat answers the original and writes nothing', async () => {
    const { id } = await server.sessions.create('u1')
    const first = await server.push(id, 'u1', { id: 'evt-1', type: 'message', payload: { text: 'hi' } })
    const again = await server.push(id, 'u1', { id: 'evt-1', type: 'message', payload: { text: 'hi' } })
    expect(first.duplicate).toBe(false)
    expect(again.duplicate).toBe(true)
    expect(again.events[0]).toEqual(first.events[0])
    expect(await countEvents(id)).toBe(1)
    // The same id in another session is a different event.
    const other = await server.sessions.create('u1')
    const elsewhere = await server.push(other.id, 'u1', { id: 'evt-1', type: 'message', payload: { text: 'hi' } })
    expect(elsewhere.duplicate).toBe(false)
  })

  it.each([
    ['unknown_type', { type: 'nope', payload: {} }],
    ['invalid_payload', { type: 'message', payload: { text: '' } }],
    ['invalid_payload', { type: 'message', payload: { text: 42 } }],
    ['server_only_type', { type: 'chunk', payload: { of: 'x', delta: 'y' } }],
    ['server_only_type', { type: 'a2.failed', payload: { of: 'x', consumer: 'c', attempts: 1, error: { message: 'm' } } }],
    ['payload_too_large', { type: 'message', payload: { text: 'x'.repeat(3000) } }],
    ['bad_request', { type: 'message', payload: { text: 'a' }, extra: 1 }],
    ['bad_request', { id: 'has space', type: 'message', payload: { text: 'a' } }],
    ['bad_request', 'just a string'],
    ['bad_request', { events: [] }],
    ['unknown_type', { type: '__proto__', payload: {} }],
    ['invalid_text', { type: 'message', payload: { text: 'nul \u0000 inside' } }],
    ['invalid_text', { type: 'message', payload: { text: 'lone \ud800 surrogate' } }],
    ['invalid_text', { type: 'message', payload: { text: 'a', ['\udfff']: 1 } }],
    ['too_deep', { type: 'message', payload: { text: 'a', deep: JSON.parse('['.repeat(100) + ']'.repeat(100)) } }],
    [
      'bad_request',
      {
        events: [
          { id: 'same', type: 'message', payload: { text: 'a' } },
          { id: 'same', type: 'message', payload: { text: 'b' } },
        ],
      },
    ],
  ])('refuses %s and writes nothing (%j)', async (code, body) => {
    const { id } = await server.sessions.create('u1')
    const error = await server.push(id, 'u1', body).catch((e) => e)
    expect(isA2Error(error)).toBe(true)
    expect(error.code).toBe(code)
    expect(await countEvents(id)).toBe(0)
  })

  it('refuses a batch as a whole when one event is bad', async () => {
    const { id } = await server.sessions.create('u1')
    const error = await server
      .push(id, 'u1', {
        events: [
          { type: 'message', payload: { text: 'ok' } },
          { type: 'chunk', payload: { of: 'a', delta: 'b' } },
        ],
      })
      .catch((e) => e)
    expect(error.code).toBe('server_only_type')
    expect(await countEvents(id)).toBe(0)
  })

  it("refuses someone else's session exactly like a session that does not exist (no existence oracle)", async () => {
    const { id } = await server.sessions.create('owner')
    const push = await server.push(id, 'intruder', { type: 'message', payload: { text: 'hi' } }).catch((e) => e)
    expect(push.code).toBe('not_found')
    const read = await server.read(id, 'intruder').catch((e) => e)
    expect(read.code).toBe('not_found')
    const tail = await server.tail(id, 'intruder', { after: -1, signal: new AbortController().signal }).catch((e) => e)
    expect(tail.code).toBe('not_found')
    const missing = await server.push('no-such-session', 'owner', { type: 'message', payload: { text: 'hi' } }).catch((e) => e)
    expect(missing.code).toBe('not_found')
    expect(await countEvents(id)).toBe(0)
  })

  it('refuses a step of a run once that run is cancelled (admission)', async () => {
    const s = await serverWithGenerate()
    const { id } = await s.sessions.create('u1')
    const [generate] = (await s.push(id, 'u1', { type: 'generate', payload: {} })).events
    await s.push(id, 'u1', { type: 'note', payload: { of: generate.id } })
    await s.push(id, 'u1', { type: 'cancelled', payload: { of: generate.id, lastSeenIndex: 1 } })
    const refused = await s.push(id, 'u1', { type: 'note', payload: { of: generate.id } }).catch((e) => e)
    expect(refused.code).toBe('run_cancelled')
    expect(await countEvents(id)).toBe(3)
  })

  it("commits many sessions' step batches in a few statements, each batch refused or landed on its own", async () => {
    const s = await serverWithGenerate()
    const sessions = await Promise.all(
      Array.from({ length: 30 }, async () => {
        const { id } = await s.sessions.create('u1')
        const [generate] = (await s.push(id, 'u1', { type: 'generate', payload: {} })).events
        const [job] = await query<{ id: number }>(store.db, sql`select id from a2_jobs where event_id = ${generate.id}`)
        return { id, of: generate.id, jobId: Number(job.id) }
      }),
    )
    // Unclaimed jobs are at attempt 0: that is the fence that holds; attempt 1 is fenced out.
    const plan = sessions.map((session, i) => ({
      ...session,
      fate: i === 3 ? 'fenced' : i === 7 ? 'run_cancelled' : i === 11 ? 'database error' : i === 12 ? 'not_found' : 'lands',
    }))
    await s.push(plan[7].id, 'u1', { type: 'cancelled', payload: { of: plan[7].of, lastSeenIndex: 0 } })

    const counted = countingStore(store, /a2_append_steps_many/) // the same database, its own committer; its step statements
    const { appendSteps } = await import('./internal/log/batched-appends')
    const outcomes = await Promise.all(
      plan.map(({ id, of, jobId, fate }) => {
        // jsonb cannot hold U+0000: the database refuses that statement as a whole.
        const delta = fate === 'database error' ? 'bad\u0000' : `to ${id}`
        const inputs = [0, 1, 2].map((k) => ({ type: 'chunk', payload: { of, delta: `${delta} ${k}` }, stepOf: of }))
        const sessionId = fate === 'not_found' ? 'no-such-session' : id
        return appendSteps(counted, sessionId, inputs, { jobId, attempt: fate === 'fenced' ? 1 : 0 }).then(
          (events) => ({ events }),
          (error: unknown) => ({ error }),
        )
      }),
    )
    // Postgres: two go at once, alone; the other 28 wait and go together. The database refuses
    // that statement (the U+0000), so its 28 batches go again one by one: 2 + 1 + 28. PGlite:
    // all 30 go in one statement (one loop turn), refused, then one by one: 1 + 30.
    expect(counted.statements).toBe(31)

    for (const [i, { id, fate }] of plan.entries()) {
      const outcome = outcomes[i] as { events?: Array<{ index: number; payload: unknown }>; error?: unknown }
      const written = await query<{ index: number; payload: { delta: string } }>(
        store.db,
        sql`select index, payload from a2_events where session_id = ${id} and type = 'chunk' order by index`,
      )
      if (fate === 'lands') {
        expect(outcome.events?.map((e) => e.index)).toEqual([1, 2, 3])
        expect(written.map((r) => [r.index, r.payload.delta])).toEqual([0, 1, 2].map((k) => [k + 1, `to ${id} ${k}`]))
      } else {
        expect(written).toEqual([])
        if (fate === 'database error') expect(isA2Error(outcome.error)).toBe(false)
        else expect(isA2Error(outcome.error, fate as 'fenced' | 'run_cancelled' | 'not_found')).toBe(true)
      }
    }
    // No index was spent by a refused batch: the next append in each session continues gaplessly.
    const [after] = await s.append(plan[3].id, { type: 'message', payload: { text: 'next' } })
    expect(after.index).toBe(1)
  })

  it('fails only the batch whose payload cannot be serialised; the others land', async () => {
    const [a, b, c, d] = await Promise.all([1, 2, 3, 4].map(() => server.sessions.create('u1')))
    const { appendSteps } = await import('./internal/log/batched-appends')
    // Postgres: the three that could be serialised each take one of the four statements in
    // flight. PGlite: they go together at the end of the loop turn.
    const counted = countingStore(store, /a2_append_steps_many/)
    const [, , bad, good] = await Promise.allSettled([
      appendSteps(counted, c.id, [{ type: 'message', payload: { text: 'first' } }]),
      appendSteps(counted, d.id, [{ type: 'message', payload: { text: 'second' } }]),
      appendSteps(counted, a.id, [{ type: 'message', payload: { text: 1n } }]),
      appendSteps(counted, b.id, [{ type: 'message', payload: { text: 'fine' } }]),
    ])
    expect(counted.statements).toBe(kind === 'pglite' ? 1 : 3)
    expect(bad.status).toBe('rejected')
    expect(good.status === 'fulfilled' && good.value.map((e) => e.index)).toEqual([0])
    expect(await countEvents(a.id)).toBe(0)
  })

  it('coalesces concurrent batches into fewer statements than batches when none is refused', async () => {
    const sessions = await Promise.all(Array.from({ length: 40 }, () => server.sessions.create('u1')))
    const counted = countingStore(store, /a2_append_steps_many/)
    const { appendSteps } = await import('./internal/log/batched-appends')
    const results = await Promise.all(sessions.map(({ id }) => appendSteps(counted, id, [{ type: 'message', payload: { text: id } }])))
    expect(results.map((events) => events.map((e) => e.index))).toEqual(sessions.map(() => [0]))
    // Postgres: four statements go at once; the other 36 batches wait and share one. PGlite runs
    // a statement on this loop, so one started at once would be over before the next batch came:
    // batches submitted in one loop turn go as one statement.
    expect(counted.statements).toBe(kind === 'pglite' ? 1 : 5)
  })

  it('resumes a tail from a cursor with exactly the missing events', async () => {
    const { id } = await server.sessions.create('u1')
    for (let i = 0; i < 10; i++) await server.append(id, { type: 'message', payload: { text: `m${i}` } })
    const controller = new AbortController()
    const got: number[] = []
    for await (const batch of await server.tail(id, 'u1', { after: 6, signal: controller.signal })) {
      got.push(...batch.map((e) => e.index))
      if (got.length >= 3) break
    }
    expect(got).toEqual([7, 8, 9])
    expect(await server.subscriptions()).toBe(0)
  })

  describe('a tail fed by the notifications', () => {
    /** Runs a tail on a store that counts its statements, until `want` events came or `ms` passed. */
    async function tailInto(sessionId: string, after: number, want: number) {
      const counted = countingStore(store)
      const controller = new AbortController()
      const got: Array<{ index: number; payload: unknown }> = []
      const { tail } = await import('./internal/log/tail')
      const done = (async () => {
        for await (const batch of tail(counted, sessionId, { after, signal: controller.signal, pollMs: 60_000 })) {
          got.push(...batch)
          if (got.length >= want) break
        }
      })()
      return {
        got,
        get reads() {
          return counted.statements
        },
        done: Promise.race([done, new Promise((_, reject) => setTimeout(() => reject(new Error(`tail got ${got.length} of ${want}`)), 10_000))]),
        stop: () => controller.abort(),
      }
    }

    it('takes the events from the hints once caught up: one read for 40 appends of both kinds', async () => {
      const { id } = await server.sessions.create('u1')
      await server.append(id, { type: 'message', payload: { text: 'before' } })
      const t = await tailInto(id, -1, 41)
      await vi.waitFor(() => expect(t.got).toHaveLength(1))
      for (let i = 0; i < 20; i++) {
        await server.append(id, { type: 'message', payload: { text: `step ${i}` } }) // the step path (a2_append_steps_many)
        await sessionHintsSent(store, id) // its hint follows its commit; a consumer's notifying append waits for it so (append.ts)
        await server.push(id, 'u1', { id: `push-${i}`, type: 'message', payload: { text: `push ${i}` } }) // the transactional path
      }
      await t.done
      expect(t.got.map((e) => e.index)).toEqual(Array.from({ length: 41 }, (_, i) => i))
      expect(t.got.slice(1).map((e) => (e.payload as { text: string }).text)).toEqual(
        Array.from({ length: 20 }, (_, i) => [`step ${i}`, `push ${i}`]).flat(),
      )
      // What it was handed equals what the log holds.
      expect(t.got).toEqual(await server.read(id, 'u1', { limit: 100 }))
      expect(t.reads).toBe(1)
    })

    it('reads the log for an append too big to carry in the hint', async () => {
      const { id } = await server.sessions.create('u1')
      const t = await tailInto(id, -1, 10)
      await vi.waitFor(() => expect(t.reads).toBe(1))
      await server.append(id, { type: 'message', payload: { text: 'small' } })
      const big = 'x'.repeat(990) // 9 × ~1 KB: over the 7,900 bytes a hint carries
      await server.append(id, ...Array.from({ length: 9 }, (_, i) => ({ type: 'message' as const, payload: { text: `${i}${big}` } })))
      await t.done
      expect(t.got.map((e) => e.index)).toEqual(Array.from({ length: 10 }, (_, i) => i))
      expect(t.got).toEqual(await server.read(id, 'u1', { limit: 100 }))
      expect(t.reads).toBe(2) // the first read, then the big append's
    })

    it('reads the log across a gap instead of trusting a hint that does not follow on', async () => {
      const { id } = await server.sessions.create('u1')
      await server.append(id, { type: 'message', payload: { text: 'm0' } })
      const t = await tailInto(id, 0, 2)
      await vi.waitFor(() => expect(t.reads).toBe(1))
      // Index 1 lands without a notification (as if it was lost), then a hint for index 2 arrives.
      await query(store.db, sql`update a2_sessions set head = head + 1 where id = ${id}`)
      await query(store.db, sql`insert into a2_events (session_id, index, id, type, payload) values (${id}, 1, 'silent', 'message', '{"text":"m1"}')`)
      await server.append(id, { type: 'message', payload: { text: 'm2' } })
      await t.done
      expect(t.got.map((e) => [e.index, (e.payload as { text: string }).text])).toEqual([
        [1, 'm1'],
        [2, 'm2'],
      ])
      expect(t.reads).toBe(2)
    })
  })
})
