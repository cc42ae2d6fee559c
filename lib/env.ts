/** The only reader of process.env: validated once with zod, so a bad setting fails at start with a clear message. */
import { z } from 'zod'

const schema = z.object({
  DATABASE_URL: z.string().url().optional(),
  /** Where the embedded PGlite database and the generated development secret live. */
  A2_DATA_DIR: z.string().default('.data'),
  /** Signs the identity cookie. Required in production; generated into A2_DATA_DIR in development. */
  AUTH_SECRET: z.string().min(32).optional(),
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_BASE_URL: z.string().url().optional(),
  OPENAI_MODEL: z.string().min(1).optional(),
  OFFLINE_MS_PER_TOKEN: z.coerce.number().int().min(0).max(1000).optional(),
  /** Run the worker inside the Next.js server process (the default). Set 0 when `npm run worker` processes do the work. */
  A2_EMBEDDED_WORKER: z
    .enum(['0', '1', 'true', 'false'])
    .default('1')
    .transform((v) => v === '1' || v === 'true'),
  /** Pushes per user per minute. */
  A2_RATE_PUSHES_PER_MIN: z.coerce.number().int().positive().default(120),
  /** Generations per user per minute. */
  A2_RATE_GENERATIONS_PER_MIN: z.coerce.number().int().positive().default(20),
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
})

export type Env = z.infer<typeof schema>

let cached: Env | undefined

export function env(): Env {
  if (!cached) {
    const parsed = schema.safeParse(process.env)
    if (!parsed.success) {
      throw new Error(`invalid environment:\n${z.prettifyError(parsed.error)}`)
    }
    // Empty strings from shell exports mean "unset".
    cached = parsed.data
  }
  return cached
}

/** Tests change process.env between layers; production reads it once. */
export function resetEnvForTests(): void {
  cached = undefined
}
