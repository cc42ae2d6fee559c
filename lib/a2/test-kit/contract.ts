/** A small contract for library tests, shaped like the chat's. */
import { z } from 'zod'
import { defineContract } from '@/lib/a2'

export const testContract = defineContract({
  events: {
    message: { schema: z.object({ text: z.string().min(1).max(1000) }), push: true },
    generate: { schema: z.object({}).strict(), push: true },
    chunk: { schema: z.object({ of: z.string(), delta: z.string() }), stepOf: (p: { of: string }) => p.of },
    note: { schema: z.object({ of: z.string() }), push: true, stepOf: (p: { of: string }) => p.of },
    cancelled: { schema: z.object({ of: z.string(), lastSeenIndex: z.number().int().min(-1) }), push: true },
  },
  maxPayloadBytes: 2048,
})
