/**
 * The chat's contract: every event a chat session's log can hold. Browsers push
 * `message`, `generate` and `cancelled`; everything else is written by the server.
 */
import { z } from 'zod'
import { defineContract, type EventOf } from '@/lib/a2'

/** 16k characters: a long pasted document fits; the payload bound (64 KiB) still holds with JSON escaping. */
export const MAX_MESSAGE_CHARS = 16_000

/** Why an answer ended: the model's own reasons, plus `cancelled` (a Stop). The `finished` event's `reason`. */
/** 'session_full' is ours (the chat reached its size cap, A2_MAX_EVENTS_PER_SESSION, mid-answer), never the model's. */
export const FINISH_REASONS = ['stop', 'length', 'content-filter', 'tool-calls', 'cancelled', 'error', 'other', 'session_full'] as const
export type FinishReason = (typeof FINISH_REASONS)[number]

/** The longest chunk delta: a model's delta is never cut, so one longer than this fails its append. */
export const MAX_DELTA_CHARS = 8_000

/** An answer's tokens: the provider's figures, or (`counted: true`) the app's count when it reported none (a Stop, a server without usage). */
const usage = z.object({ inputTokens: z.number().int().optional(), outputTokens: z.number().int().optional(), counted: z.literal(true).optional() })

export const chat = defineContract({
  events: {
    /**
     * A user's message. `edits` names the message it is a new version of (edit-and-resend);
     * `after` names the answer it follows (the version on screen when it was sent).
     */
    message: {
      schema: z
        .object({ text: z.string().trim().min(1).max(MAX_MESSAGE_CHARS), edits: z.string().max(64).optional(), after: z.string().max(64).optional() })
        .strict(),
      push: true,
    },
    /**
     * Asks for an answer to message `for`: one more version of the answer to it (the others kept,
     * browsable). `replaces` names the version a regenerate follows. `model` is the configured
     * model's id that answers (admission refuses an id the server does not offer); unset, the
     * default (the list's first). `continues` names a stopped answer to the same message: this
     * version starts with the text that answer shows (its cut) and the model is asked to go on
     * from there (Continue after Stop).
     */
    generate: {
      schema: z
        .object({
          for: z.string().max(64),
          replaces: z.string().max(64).optional(),
          model: z.string().max(64).optional(),
          continues: z.string().max(64).optional(),
        })
        .strict(),
      push: true,
    },
    /**
     * One streamed token batch of answer `of`, from attempt `attempt`. A step of its run:
     * once the run is cancelled the log refuses more (the admission boundary).
     */
    chunk: {
      schema: z.object({ of: z.string(), attempt: z.number().int().min(1), delta: z.string().max(MAX_DELTA_CHARS) }).strict(),
      stepOf: (payload: { of: string }) => payload.of,
    },
    /** Answer `of` ended: the terminal event. */
    finished: {
      schema: z
        .object({
          of: z.string(),
          attempt: z.number().int().min(1),
          reason: z.enum(FINISH_REASONS),
          usage: usage.optional(),
        })
        .strict(),
    },
    /** The user pressed Stop on answer `of`, having seen the log up to `lastSeenIndex`. */
    cancelled: {
      schema: z.object({ of: z.string().max(64), lastSeenIndex: z.number().int().min(-1) }).strict(),
      push: true,
    },
    /** The assistant's save-note tool ran (through ctx.effect) for answer `of`. */
    'note.saved': {
      schema: z.object({ of: z.string(), note: z.string().max(2_000), key: z.string() }).strict(),
    },
  },
  maxPayloadBytes: 64 * 1024,
})

export type Chat = typeof chat
export type ChatEvent = EventOf<Chat>
