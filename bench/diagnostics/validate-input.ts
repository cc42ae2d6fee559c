/**
 * Diagnostic (`npx tsx bench/diagnostics/validate-input.ts`): the CPU cost of validating one
 * appended event. lib/a2/internal/contract.ts builds its envelope schema (z.object(...)
 * with a regex, .strict()) inside validateInput, so every event — every chunk — constructs
 * and compiles a zod schema. Compared with the same checks on an envelope built once.
 * (Imports a library internal: a diagnostic may; the app may not.)
 */
import { z } from 'zod'
import { validateInput } from '@/lib/a2/internal/contract'
import { chat } from '@/lib/chat/contract'

const input = { type: 'chunk', payload: { of: 'g', attempt: 1, delta: 'hello ' } }
const envelope = z
  .object({
    id: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[A-Za-z0-9_-]+$/)
      .optional(),
    type: z.string().min(1).max(64),
    payload: z.unknown(),
  })
  .strict()
const definitions = chat.events as Record<string, { schema: z.ZodType }>
const hoisted = (value: unknown) => {
  const shape = envelope.safeParse(value)
  if (!shape.success) throw new Error('bad envelope')
  new TextEncoder().encode(JSON.stringify(shape.data.payload ?? null))
  return definitions[shape.data.type].schema.safeParse(shape.data.payload)
}

for (const [name, fn] of [
  ['validateInput (schema built per call)', () => validateInput(chat, input, 'server')],
  ['same checks, envelope built once     ', () => hoisted(input)],
] as const) {
  for (let i = 0; i < 2_000; i++) fn()
  const t = performance.now()
  for (let i = 0; i < 20_000; i++) fn()
  console.log(`${name}: ${((1000 * (performance.now() - t)) / 20_000).toFixed(1)} µs per event`)
}
