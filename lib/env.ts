/** The only reader of process.env: validated once with zod, so a bad setting fails at start with a clear message. */
import { z } from 'zod'
import { readFileSync } from 'node:fs'
import { modelListText } from './ai/model-list'
import { mcpServersText } from './mcp/config'

/** A positive whole number from the environment, with its default. */
const count = (fallback: number) => z.coerce.number().int().positive().default(fallback)
const flag = (fallback: '0' | '1') =>
  z
    .enum(['0', '1', 'true', 'false'])
    .default(fallback)
    .transform((v) => v === '1' || v === 'true')

/** A comma-separated list as a set, entries trimmed (and normalized by `each`), empties dropped. */
const commaSet = (each: (s: string) => string = (s) => s) =>
  z
    .string()
    .optional()
    .transform(
      (v) =>
        new Set(
          (v ?? '')
            .split(',')
            .map((s) => each(s.trim()))
            .filter(Boolean),
        ),
    )

const schema = z.object({
  DATABASE_URL: z.string().url().optional(),
  /** Where the embedded PGlite database and the generated development secret live. */
  A2_DATA_DIR: z.string().default('.data'),
  /** Signs the identity cookie. Required in production; generated into A2_DATA_DIR in development. */
  AUTH_SECRET: z.string().min(32, 'AUTH_SECRET must be at least 32 characters').optional(),
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_BASE_URL: z.string().url().optional(),
  OPENAI_MODEL: z.string().min(1).optional(),
  OFFLINE_MS_PER_TOKEN: z.coerce.number().int().min(0).max(1000).optional(),
  /** The models on offer, a JSON array (lib/ai/model-list.ts); the first is the default. Unset: the one model the OPENAI_* variables name, or the offline model. */
  A2_MODELS: modelListText.optional(),
  /**
   * Where the assistant's sendWebhook tool POSTs (lib/chat/tools/webhook.ts: JSON with an
   * Idempotency-Key; a GET by key answers whether it arrived). Unset, the tool is not offered.
   */
  A2_WEBHOOK_URL: z.string().url().optional(),
  /**
   * The MCP servers whose tools the models are offered (lib/mcp/config.ts, docs/tools.md): JSON
   * `{ "mcpServers": { "<name>": { "command", "args", "env" } | { "url", "headers" } } }`, the
   * shape MCP clients share, here or in the file A2_MCP_SERVERS_FILE names (not both). Unset: none.
   */
  A2_MCP_SERVERS: mcpServersText('A2_MCP_SERVERS').optional(),
  A2_MCP_SERVERS_FILE: z.string().optional(),
  /** Run the worker inside the Next.js server process (the default). Set 0 when `npm run worker` processes do the work. */
  A2_EMBEDDED_WORKER: flag('1'),

  /**
   * Behind a reverse proxy: take the client's address from the last X-Forwarded-For entry
   * (the one the proxy appended) and the scheme from X-Forwarded-Proto. Off by default: a
   * client could otherwise name any address and get a fresh set of per-address limits.
   */
  A2_TRUST_PROXY: flag('0'),
  /** Operators (the /runs view of every user, settling UNKNOWN effects): a bearer token or cookie… */
  A2_OPERATOR_TOKEN: z.string().min(32, 'A2_OPERATOR_TOKEN must be at least 32 characters').optional(),
  /** …or these user ids (comma-separated): accounts' ids (or guests'), checked server-side against the signed identity… */
  A2_OPERATOR_USER_IDS: commaSet(),
  /** …or the accounts with these emails (comma-separated), once the email is verified. */
  A2_OPERATOR_EMAILS: commaSet((s) => s.toLowerCase()),
  /**
   * The app's public origin (https://chat.example.com): the links in the mail accounts send
   * (verify, reset). Unset, better-auth takes it from each request (fine on one host).
   */
  A2_PUBLIC_URL: z.string().url().optional(),

  // Rates, stored in the database so every app instance shares them (lib/http/limits.ts).
  /** Pushes per user per minute. */
  A2_RATE_PUSHES_PER_MIN: count(120),
  /** Password sign-in attempts per account (by email) per minute, from any address (better-auth limits each address too). */
  A2_RATE_SIGN_INS_PER_MIN_PER_ACCOUNT: count(10),
  /** Password sign-ins, and sign-ups, per client address per minute (better-auth's own limit, kept in the database). */
  A2_RATE_ACCOUNT_ATTEMPTS_PER_MIN_PER_ADDRESS: count(10),
  /** Generations per user per minute. */
  A2_RATE_GENERATIONS_PER_MIN: count(20),
  /** New identities (cookie-less visitors) per client address per minute: identities are free, addresses are not. */
  A2_RATE_IDENTITIES_PER_MIN_PER_ADDRESS: count(10),
  /** Pushes per client address per minute, whichever identities they come with. */
  A2_RATE_PUSHES_PER_MIN_PER_ADDRESS: count(300),
  /** Generations per client address per minute, whichever identities they come with. */
  A2_RATE_GENERATIONS_PER_MIN_PER_ADDRESS: count(30),

  // Concurrency, counted from the runs table at admission.
  /** Generations one user may have running (queued or streaming) at once. */
  A2_MAX_RUNNING_GENERATIONS_PER_USER: count(3),
  /** Generations running at once across all users: under the worker's 64 slots, so one flood cannot take them all. */
  A2_MAX_RUNNING_GENERATIONS: count(48),

  /** Model tokens (input + output, as the model reports them) one user may spend in 24 hours. */
  A2_DAILY_TOKENS_PER_USER: count(200_000),

  // What one identity may hold or open.
  A2_MAX_SESSIONS_PER_USER: count(1_000),
  /** Events in one session (chunks included) past which pushes are refused. */
  A2_MAX_EVENTS_PER_SESSION: count(50_000),
  /** Bytes of pushed payloads one session may hold. */
  A2_MAX_PUSHED_BYTES_PER_SESSION: count(4 * 1024 * 1024),
  /** Open SSE tails per user (tabs) and per app process. */
  A2_MAX_TAILS_PER_USER: count(16),
  A2_MAX_TAILS_PER_PROCESS: count(2_000),
  /** Snapshots folded at once per process: each holds a session's state in memory. */
  A2_MAX_SNAPSHOTS_IN_FLIGHT: count(4),
  /** A request body must arrive within this many ms (a slow-drip body holds a connection); an upload may pause this long, at most (lib/files/upload-body.ts). */
  A2_BODY_TIMEOUT_MS: count(10_000),
  /** The model's context budget in tokens (~4 characters each): older turns beyond it are left out. */
  A2_CONTEXT_BUDGET_TOKENS: count(8_000),
  /**
   * How long a tool call that needs the user's approval waits before it expires as denied
   * (recorded as a `tool.decision` of `expired`; the answer goes on without it): 10 minutes.
   */
  A2_APPROVAL_TIMEOUT_MS: count(600_000),

  // Attachments (lib/files, docs/attachments.md).
  /** Bytes one attached file may have (413 past it, nothing stored). */
  A2_MAX_FILE_BYTES: count(10 * 1024 * 1024),
  /** Files one message may carry. */
  A2_MAX_FILES_PER_MESSAGE: count(8),
  /** Bytes of the files one message may carry together. */
  A2_MAX_MESSAGE_FILE_BYTES: count(25 * 1024 * 1024),
  /** Bytes of files one account may keep: uploads past it are 413s until chats are deleted. */
  A2_FILE_QUOTA_BYTES_PER_USER: count(200 * 1024 * 1024),
  /** A guest's (no account): a cookie costs nothing to mint, so less room each (A2_RATE_IDENTITIES_PER_MIN_PER_ADDRESS bounds how many). */
  A2_FILE_QUOTA_BYTES_PER_GUEST: count(20 * 1024 * 1024),
  /** An upload no message refers to is deleted this many ms after it arrived (a sweep at start and every few minutes). */
  A2_UNREFERENCED_FILE_TTL_MS: count(60 * 60 * 1000),
  /** Set to keep files' bytes in an S3-compatible bucket (AWS, R2, MinIO …) instead of the database. */
  A2_S3_BUCKET: z.string().min(1).optional(),
  /** The store's endpoint (unset: AWS itself). */
  A2_S3_ENDPOINT: z.string().url().optional(),
  A2_S3_REGION: z.string().min(1).default('us-east-1'),
  A2_S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  A2_S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** Path-style URLs (`endpoint/bucket/key`): MinIO and most self-hosted stores need it. */
  A2_S3_FORCE_PATH_STYLE: flag('1'),

  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
})

export type Env = z.infer<typeof schema>

/** Every variable the app reads (docs/configuration.md documents each). */
export const ENV_VARIABLES = Object.keys(schema.shape) as ReadonlyArray<keyof Env>

let cached: Env | undefined

/**
 * Compose files and shell exports write `NAME=` for "not set": an empty value counts as
 * unset, so `OPENAI_API_KEY=` selects the offline model instead of failing validation.
 */
const isEmpty = (value: string | undefined) => value === undefined || value.trim() === ''

function withoutEmpty(source: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(source).filter((entry): entry is [string, string] => !isEmpty(entry[1])))
}

/**
 * Removes every empty variable from the process's environment, before anything else is
 * imported: dependencies read their own variables when they load, and take empty as a value.
 * `@ai-sdk/openai` builds its default provider on import and throws "baseURL must be a
 * non-empty string" on `OPENAI_BASE_URL=` (issue 39), a failure of every request. Returns
 * the names removed.
 */
export function unsetEmptyVariables(source: Record<string, string | undefined> = process.env): string[] {
  const empty = Object.keys(source).filter((name) => source[name] !== undefined && isEmpty(source[name]))
  for (const name of empty) delete source[name]
  return empty
}

export class InvalidEnvironment extends Error {
  constructor(readonly problems: string) {
    super(`invalid environment:\n${problems}`)
    this.name = 'InvalidEnvironment'
  }
}

export function parseEnv(source: Record<string, string | undefined>): Env {
  const values = withoutEmpty(source)
  const parsed = schema.safeParse(values)
  const problems = parsed.success ? [] : [z.prettifyError(parsed.error)]
  // Checked beside the schema, not after it, so one message names every problem at once.
  if (values.NODE_ENV === 'production' && !values.AUTH_SECRET) {
    problems.push('✖ AUTH_SECRET is required when NODE_ENV=production (32+ random characters, e.g. `openssl rand -base64 48`)\n  → at AUTH_SECRET')
  }
  if (parsed.success) problems.push(...modelListProblems(parsed.data))
  const servers = parsed.success ? mcpServersFromFile(parsed.data, problems) : undefined
  if (problems.length > 0 || !parsed.success) throw new InvalidEnvironment(problems.join('\n'))
  return { ...parsed.data, A2_MCP_SERVERS: servers ?? parsed.data.A2_MCP_SERVERS }
}

/** A2_MCP_SERVERS_FILE read and validated like the variable, its problems named by the file. */
function mcpServersFromFile(e: Env, problems: string[]): Env['A2_MCP_SERVERS'] {
  const path = e.A2_MCP_SERVERS_FILE
  if (!path) return undefined
  if (e.A2_MCP_SERVERS) {
    problems.push('✖ set A2_MCP_SERVERS or A2_MCP_SERVERS_FILE, not both\n  → at A2_MCP_SERVERS_FILE')
    return undefined
  }
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    problems.push(
      `✖ A2_MCP_SERVERS_FILE: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})\n  → at A2_MCP_SERVERS_FILE`,
    )
    return undefined
  }
  const parsed = mcpServersText(`A2_MCP_SERVERS_FILE (${path})`).safeParse(text)
  if (parsed.success) return parsed.data
  problems.push(z.prettifyError(parsed.error).replace(/→ at /g, `→ at ${path}: `))
  return undefined
}

/** What the model list's schema cannot see: how it sits with the other variables. */
function modelListProblems(e: Env): string[] {
  if (!e.A2_MODELS) return []
  const problems: string[] = []
  // Read only without A2_MODELS: set beside it, they would be silently ignored.
  for (const name of ['OPENAI_BASE_URL', 'OPENAI_MODEL'] as const) {
    if (!e[name]) continue
    problems.push(`✖ ${name} names the one model used without A2_MODELS: give each model in A2_MODELS its baseURL and model\n  → at ${name}`)
  }
  e.A2_MODELS.forEach((entry, i) => {
    if (entry.provider === 'openai' && !entry.baseURL && !entry.apiKey && !e.OPENAI_API_KEY) {
      problems.push(`✖ model "${entry.id}" is OpenAI itself (no baseURL): it needs an apiKey, or OPENAI_API_KEY set\n  → at A2_MODELS[${i}].apiKey`)
    }
  })
  return problems
}

export function env(): Env {
  cached ??= parseEnv(process.env)
  return cached
}

/**
 * Validates the environment at process start: an invalid configuration prints one message
 * naming each bad variable and exits, before the server takes a request. Called before any
 * other module of the app is imported (instrumentation.ts, scripts/worker.ts): it unsets the
 * empty variables first, for the dependencies those modules load.
 */
export function checkEnvAtBoot(): Env {
  unsetEmptyVariables()
  try {
    return env()
  } catch (error) {
    if (!(error instanceof InvalidEnvironment)) throw error
    console.error(`[a2] cannot start: ${error.message}`)
    process.exit(1)
  }
}

/** Tests change process.env between layers; production reads it once. */
export function resetEnvForTests(): void {
  cached = undefined
}
