/**
 * outage.ts: which errors are an outage (the store unreachable, not the statement wrong), the
 * retry that sends a write again through one (bounded backoff, a lost claim or a deadline ends
 * it), and the route's answer while the store is away: 503 with Retry-After, never 500 — a
 * browser's outbox sends a Stop again after a 5xx and would drop it after a 4xx.
 */
import { describe, expect, it } from 'vitest'
import { createServer, errorResponse, isStoreUnreachable } from '@/lib/a2/server'
import { layers, useTestStore } from './test-kit/db'
import { testContract } from './test-kit/contract'
import { eventsOf, historyOf, interceptStore, waitForJob } from './test-kit/runtime'
import { consumer } from './internal/runtime/consumer'
import { throughOutage } from './internal/store/outage'

const withCode = (code: string) => Object.assign(new Error(code), { code })

describe('isStoreUnreachable', () => {
  it('is true for connection errors and the SQLSTATEs of a server going away, found through drizzle’s wrapping', () => {
    for (const code of [
      'ECONNREFUSED',
      'ECONNRESET',
      'CONNECTION_ENDED',
      'CONNECTION_CLOSED',
      'CONNECTION_DESTROYED',
      'CONNECT_TIMEOUT',
      '57P01',
      '57P03',
      '08006',
      '08001',
    ]) {
      expect(isStoreUnreachable(withCode(code)), code).toBe(true)
      expect(isStoreUnreachable(new Error('Failed query: …', { cause: withCode(code) })), `wrapped ${code}`).toBe(true)
    }
  })
  it('is false for a statement the database refused, and for anything else', () => {
    for (const error of [withCode('23505'), withCode('40001'), withCode('42P01'), new Error('boom'), 'text', undefined]) {
      expect(isStoreUnreachable(error)).toBe(false)
    }
  })
})

describe('throughOutage', () => {
  it('sends the write again until the store answers, and only for an outage', async () => {
    let tries = 0
    await expect(throughOutage(async () => (++tries < 3 ? Promise.reject(withCode('ECONNREFUSED')) : 'landed'))).resolves.toBe('landed')
    expect(tries).toBe(3)
    tries = 0
    await expect(throughOutage(async () => (tries++, Promise.reject(withCode('23505'))))).rejects.toMatchObject({ code: '23505' })
    expect(tries).toBe(1)
  })
  it('stops when the claim is lost, or at its deadline, with the outage’s error', async () => {
    let tries = 0
    const lost = throughOutage(async () => (tries++, Promise.reject(withCode('57P01'))), { giveUp: () => tries >= 2 })
    await expect(lost).rejects.toMatchObject({ code: '57P01' })
    expect(tries).toBe(2)
    const started = performance.now()
    await expect(throughOutage(() => Promise.reject(withCode('ECONNRESET')), { until: started + 300 })).rejects.toMatchObject({ code: 'ECONNRESET' })
    expect(performance.now() - started).toBeLessThan(600)
  })
})

describe('errorResponse while the store is unreachable', () => {
  it('answers 503 with Retry-After, keeping the route’s headers', async () => {
    const response = errorResponse(new Error('Failed query: insert …', { cause: withCode('ECONNREFUSED') }), { 'set-cookie': 'a=b' })
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('1')
    expect(response.headers.get('set-cookie')).toBe('a=b')
    expect(await response.json()).toMatchObject({ error: { code: 'unavailable' } })
  })
})

/**
 * An attempt meets the outage at each of its writes — its effect's intent, a chunk append,
 * its ending — each refused a few times (as a restarting server refuses connections), and
 * comes through under its first attempt: no retry scheduled, no attempt spent, one chunk.
 */
describe.each(layers)('an attempt through an outage on %s', (kind) => {
  const store = useTestStore(kind)

  it('waits out refusals at its effect, its append and its ending: COMPLETED at attempt 1, every write once', async () => {
    const refusals = new Map([
      ['insert into a2_effects', 3],
      ['a2_append_steps_many', 3],
      ['jsonb_to_recordset', 3],
    ])
    const refused: string[] = []
    const flaky = interceptStore(store(), {
      before: (text) => {
        for (const [pattern, left] of refusals) {
          if (left > 0 && text.includes(pattern)) {
            refusals.set(pattern, left - 1)
            refused.push(pattern)
            throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
          }
        }
      },
    })
    let calls = 0
    const generate = consumer({ contract: testContract, name: 'generate', types: ['generate'], maxAttempts: 3 }).run(async (ctx) => {
      await ctx.effect('call', async () => ++calls)
      await ctx.append({ type: 'chunk', payload: { of: ctx.event.id, delta: 'once' } })
    })
    const server = createServer({ contract: testContract, consumers: [generate], store: flaky })
    const { id } = await server.sessions.create('u1')
    const [trigger] = await server.append(id, { type: 'generate', payload: {} })
    const worker = await server.startWorker({ pollMs: 50 })
    try {
      const job = await waitForJob(store(), trigger.id, 'generate', (j) => j.status !== 'ACTIVE')
      expect(job).toMatchObject({ status: 'COMPLETED', attempt: 1 })
      expect(refused).toHaveLength(9)
      expect(calls).toBe(1)
      expect((await eventsOf(store(), id)).filter((e) => e.type === 'chunk')).toHaveLength(1)
      expect(await historyOf(store(), job.id)).not.toContainEqual(expect.stringContaining('RETRY_SCHEDULED'))
    } finally {
      await worker.stop()
    }
  })
})
