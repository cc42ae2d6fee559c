/** Snapshots folding at once are bounded per process; a finished one frees its slot. */
import { afterEach, describe, expect, it } from 'vitest'
import { isA2Error } from '@/lib/a2'
import { resetEnvForTests } from '@/lib/env'
import { foldingSnapshot } from './snapshots'

describe('snapshots in flight', () => {
  afterEach(() => {
    delete process.env.A2_MAX_SNAPSHOTS_IN_FLIGHT
    resetEnvForTests()
  })

  it('refuses one past the limit with a 429, and takes one again once a slot is given back', () => {
    process.env.A2_MAX_SNAPSHOTS_IN_FLIGHT = '2'
    resetEnvForTests()
    const first = foldingSnapshot()
    const second = foldingSnapshot()
    const refused = (() => {
      try {
        foldingSnapshot()
      } catch (error) {
        return error
      }
    })()
    expect(isA2Error(refused, 'rate_limited')).toBe(true)
    first()
    first() // giving a slot back twice frees it once
    const third = foldingSnapshot()
    expect(() => foldingSnapshot()).toThrow(/opening many chats/)
    second()
    third()
  })
})
