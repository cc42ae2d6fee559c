/**
 * sessions.transfer gives every session of one owner to another (a guest's chats to the
 * account they sign up into): all of them or none, with the app's rows in the same
 * transaction; pushes racing it land whole under one owner or the other, at gapless
 * indexes; the old owner then reads and writes nothing; a second transfer moves nothing.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { createServer, type Store } from '@/lib/a2/server'
import { isA2Error } from '@/lib/a2'
import { layers, useTestStore } from './test-kit/db'
import { testContract as chat } from './test-kit/contract'

describe.each(layers)('transferring sessions on %s', (kind) => {
  const testStore = useTestStore(kind)
  let store: Store
  beforeAll(() => {
    store = testStore()
  })

  it('moves every session of the owner and nobody else’s; the old owner is then a stranger to them', async () => {
    const server = createServer({ contract: chat, consumers: [], store })
    const a = await server.sessions.create('guest-1')
    const b = await server.sessions.create('guest-1')
    const other = await server.sessions.create('guest-2')
    await server.push(a.id, 'guest-1', { id: 'm1', type: 'message', payload: { text: 'hi' } })

    expect(await server.sessions.transfer('guest-1', 'acct-1')).toBe(2)
    expect((await server.sessions.list('acct-1')).sessions.map((s) => s.id).sort()).toEqual([a.id, b.id].sort())
    expect((await server.sessions.list('guest-1')).sessions).toEqual([])
    expect((await server.sessions.list('guest-2')).sessions.map((s) => s.id)).toEqual([other.id])
    expect((await server.read(a.id, 'acct-1')).map((e) => e.id)).toEqual(['m1'])
    const refused = await server.push(a.id, 'guest-1', { id: 'm2', type: 'message', payload: { text: 'late' } }).catch((e: unknown) => e)
    expect(isA2Error(refused) && refused.code).toBe('not_found')
    expect(await server.sessions.transfer('guest-1', 'acct-1')).toBe(0)
  })

  it('rolls back with the app’s rows when its own part fails', async () => {
    const server = createServer({ contract: chat, consumers: [], store })
    const s = await server.sessions.create('guest-3')
    await expect(
      server.sessions.transfer('guest-3', 'acct-3', {
        within: async () => {
          throw new Error('the app’s part failed')
        },
      }),
    ).rejects.toThrow(/app’s part failed/)
    expect((await server.sessions.list('guest-3')).sessions.map((x) => x.id)).toEqual([s.id])
  })

  it('pushes racing a transfer land whole, each under the owner it named at its commit, at gapless indexes', async () => {
    const server = createServer({ contract: chat, consumers: [], store })
    let round = 0
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 0, max: 6 }), async (before, racing) => {
        round++
        const guest = `guest-r${round}`
        const account = `acct-r${round}`
        const { id } = await server.sessions.create(guest)
        for (let i = 0; i < before; i++) await server.push(id, guest, { id: `b${i}`, type: 'message', payload: { text: 'x' } })
        const pushes = Array.from({ length: racing }, (_, i) =>
          server.push(id, i % 2 ? account : guest, { id: `r${i}`, type: 'message', payload: { text: 'y' } }).then(
            () => 'landed',
            (e: unknown) => (isA2Error(e) && e.code === 'not_found' ? 'refused' : Promise.reject(e)),
          ),
        )
        const [moved, ...outcomes] = await Promise.all([server.sessions.transfer(guest, account), ...pushes])
        expect(moved).toBe(1)
        const log = await server.read(id, account, { limit: 100 })
        expect(log.map((e) => e.index)).toEqual(log.map((_, i) => i))
        const landed = outcomes.filter((o) => o === 'landed').length
        expect(log.length).toBe(before + landed)
      }),
      { numRuns: kind === 'pglite' ? 15 : 30, seed: 4242 },
    )
  })
})
