/**
 * The models a deployment offers, as configured in `A2_MODELS` (a JSON array; lib/env.ts reads
 * and validates it at boot with this schema). The first entry is the default. Without
 * `A2_MODELS`, the list is the one model today's variables name (`OPENAI_*`, or the offline
 * model): see `modelList` in lib/ai/model.ts.
 *
 * What a model can do is said here, not guessed: a server that refuses `tools` (llama.cpp
 * without --jinja answers 400 to any request that carries them) fails every answer if they are
 * sent, and nothing in a chat-completions server's answers says so beforehand.
 */
import { z } from 'zod'

/** An id that is safe in a URL, a log line and an event payload. */
const id = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/i, 'an id is 1–64 letters, digits, ".", "_" or "-", starting with a letter or digit')
const capabilities = {
  /** A reasoning model (it streams its thinking before the answer). */
  reasoning: z.boolean(),
  /** The server accepts `tools` in a request: the chat offers the model its tools (saveNote). */
  tools: z.boolean(),
  /**
   * The kinds of file the model takes as files (AI SDK file parts: a vision model's images, a
   * model that reads PDFs). Unset: none; its PDFs and text files go as extracted text, and it
   * is told in one line of each image it cannot see (lib/chat/answer/file-parts.ts).
   */
  files: z.array(z.enum(['image', 'pdf'])).optional(),
}

const openai = z
  .object({
    id,
    /** What a reader sees: in the picker, beside an answer. */
    label: z.string().trim().min(1).max(80),
    /** OpenAI, or any server speaking its chat-completions API (llama.cpp, Ollama, vLLM). */
    provider: z.literal('openai'),
    /** Unset: OpenAI itself. */
    baseURL: z.string().url().optional(),
    /** The model name sent upstream; unset: `id`. */
    model: z.string().min(1).optional(),
    /** Unset: OPENAI_API_KEY for OpenAI itself; the placeholder `keyless` for a server at `baseURL`. */
    apiKey: z.string().min(1).optional(),
    ...capabilities,
  })
  .strict()

const offline = z
  .object({
    id,
    label: z.string().trim().min(1).max(80),
    /** The built-in model (lib/ai/offline-model.ts): no network, paced like a reader reads. */
    provider: z.literal('offline'),
    /** 'full' (unset): the whole answer; 'brief': its opening and first paragraph (lib/ai/offline-model.ts). */
    style: z.enum(['full', 'brief']).optional(),
    ...capabilities,
  })
  .strict()

export const modelEntry = z.discriminatedUnion('provider', [openai, offline])
export type ModelEntry = z.infer<typeof modelEntry>

/** What the page is told of a model: never its baseURL, apiKey or upstream name. */
export type ModelInfo = Pick<ModelEntry, 'id' | 'label' | 'reasoning' | 'tools' | 'files'>

/** The list as the page gets it (the picker, each answer's label). */
export function publicModels(entries: readonly ModelEntry[]): ModelInfo[] {
  return entries.map(({ id, label, reasoning, tools, files }) => ({ id, label, reasoning, tools, ...(files && { files }) }))
}

/** `A2_MODELS`: JSON text → at least one entry, ids unique. */
export const modelListText = z
  .string()
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown
    } catch {
      ctx.addIssue({ code: 'custom', message: 'A2_MODELS must be JSON: an array of { id, label, provider, reasoning, tools, … }' })
      return z.NEVER
    }
  })
  .pipe(
    z
      .array(modelEntry)
      .min(1, 'A2_MODELS names no model')
      .superRefine((entries, ctx) => {
        const seen = new Set<string>()
        entries.forEach((entry, i) => {
          if (seen.has(entry.id)) ctx.addIssue({ code: 'custom', message: `model id "${entry.id}" is listed twice`, path: [i, 'id'] })
          seen.add(entry.id)
        })
      }),
  )
