import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { z } from 'zod'
import { isSessionId } from './session-id'

/** The API's check (lib/http/route.ts's sessionIdSchema is a zod uuid): the page must agree with it on every string. */
const apiAccepts = (id: string) => z.string().uuid().safeParse(id).success

describe('isSessionId', () => {
  it('agrees with the API on UUIDs of every version and variant, the nil and max ones, and near misses', () => {
    const hex = fc.constantFrom(...'0123456789abcdefABCDEFgx-'.split(''))
    const nearUuid = fc.array(hex, { minLength: 36, maxLength: 36 }).map((chars) => {
      chars[8] = chars[13] = chars[18] = chars[23] = '-'
      return chars.join('')
    })
    const samples = fc.oneof(
      fc.uuid({ version: [1, 2, 3, 4, 5, 6, 7, 8] }),
      nearUuid,
      fc.string(),
      fc.constantFrom('00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF', ''),
    )
    fc.assert(
      fc.property(samples, (id) => {
        expect(isSessionId(id)).toBe(apiAccepts(id))
      }),
      { seed: 39, numRuns: 5_000 },
    )
  })
})
