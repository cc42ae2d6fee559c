/**
 * The chat's contract: every event a chat session's log can hold. Browsers push
 * `message`, `generate` and `cancelled`; everything else is written by the server.
 */
import { z } from 'zod'
import { defineContract, type EventOf } from '@/lib/a2'
import { MAX_MESSAGE_CHARS } from './limits'

export { MAX_MESSAGE_CHARS }

/** Why an answer ended: the model's own reasons, plus `cancelled` (a Stop). The `finished` event's `reason`. */
/** 'session_full' is ours (the chat reached its size cap, A2_MAX_EVENTS_PER_SESSION, mid-answer), never the model's. */
export const FINISH_REASONS = ['stop', 'length', 'content-filter', 'tool-calls', 'cancelled', 'error', 'other', 'session_full'] as const
export type FinishReason = (typeof FINISH_REASONS)[number]

/** The longest chunk delta: a model's delta is never cut, so one longer than this fails its append. */
export const MAX_DELTA_CHARS = 8_000

/** A tool call's id as the model gave it (`call_…`), and a tool's name. */
const toolCallId = z.string().min(1).max(128)
const toolName = z.string().min(1).max(64)

/**
 * Where a tool call stands, from its effect's record: `not-started` (a Stop came before dispatch:
 * nothing happened), `running` (dispatched), `done`, `failed` (it ran and failed, no Stop
 * involved), `cancelled` (a Stop aborted it and its receiver, asked, has no record of it),
 * `unknown` (aborted or orphaned and nobody can say yet whether it happened: `settle` says how);
 * and for a call that needs the user's yes first (lib/chat/answer/approvals.ts): `awaiting-approval`
 * (the answer waits, holding no worker), `denied` (the user said no), `expired` (nobody decided in
 * time: denied). Neither of the last two ever ran.
 */
export const TOOL_CALL_STATES = [
  'not-started',
  'running',
  'done',
  'failed',
  'cancelled',
  'unknown',
  'awaiting-approval',
  'denied',
  'expired',
] as const
export type ToolCallState = (typeof TOOL_CALL_STATES)[number]

/**
 * Which run a step belongs to, when it is not the answer's own generate: a continuation after an
 * approval (the `tool.decision` event's id) streams into the answer it continues (`of`), and its
 * steps are refused once that run is stopped. Unset: the generate itself.
 */
const stepRun = z.string().max(64).optional()
const ofRun = (payload: { of: string; run?: string }) => payload.run ?? payload.of

/** A decision's binding to the call it decides: the SHA-256 of the call's canonical arguments (hex). */
const argsHash = z.string().regex(/^[0-9a-f]{64}$/)

/** An answer's tokens: the provider's figures, or (`counted: true`) the app's count when it reported none (a Stop, a server without usage). */
const usage = z.object({ inputTokens: z.number().int().optional(), outputTokens: z.number().int().optional(), counted: z.literal(true).optional() })

/**
 * A file a message carries, by reference (lib/files): the log never holds bytes. Admission
 * checks that it is the pusher's and exactly as uploaded; an edit that names no files keeps
 * those of the message it edits (the fold).
 */
export const fileRef = z
  .object({
    id: z.string().uuid(),
    name: z.string().min(1).max(255),
    mediaType: z.string().min(1).max(100),
    size: z.number().int().min(1),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .strict()
export type FileRef = z.infer<typeof fileRef>
/** The contract's own bound (the deployment's A2_MAX_FILES_PER_MESSAGE, checked at admission, may be lower). */
export const MAX_FILES_PER_MESSAGE = 32

export const chat = defineContract({
  events: {
    /**
     * A user's message. `edits` names the message it is a new version of (edit-and-resend);
     * `after` names the answer it follows (the version on screen when it was sent). `files` are
     * the files it carries, by reference; its text may be empty when it carries files.
     */
    message: {
      schema: z
        .object({
          // Empty only beside files: a photo may be sent on its own.
          text: z.string().trim().max(MAX_MESSAGE_CHARS),
          edits: z.string().max(64).optional(),
          after: z.string().max(64).optional(),
          files: z.array(fileRef).max(MAX_FILES_PER_MESSAGE).optional(),
        })
        .strict()
        .refine((message) => message.text.length > 0 || (message.files?.length ?? 0) > 0, { message: 'a message needs text or a file' }),
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
      schema: z.object({ of: z.string(), attempt: z.number().int().min(1), run: stepRun, delta: z.string().max(MAX_DELTA_CHARS) }).strict(),
      stepOf: ofRun,
    },
    /*
     * An answer is made of parts: text (`chunk`), reasoning, tool calls. Every part the model
     * streams is a step of its run, like `chunk` (refused once the run is cancelled), written
     * through one ordered writer, so a Stop's `lastSeenIndex` cuts all kinds at one point of the
     * log. A tool call's state is no step: it is what happened outside the log (the call's
     * effect record), written whenever it is known, after a Stop too.
     */
    /** Streamed reasoning of answer `of` (a reasoning model's thinking before it answers). A step of its run. */
    reasoning: {
      schema: z.object({ of: z.string(), attempt: z.number().int().min(1), run: stepRun, delta: z.string().max(MAX_DELTA_CHARS) }).strict(),
      stepOf: ofRun,
    },
    /** A fragment of the input of tool call `call` (tool `tool`) as the model streams it. A step of its run. */
    'tool.input': {
      schema: z
        .object({
          of: z.string(),
          attempt: z.number().int().min(1),
          run: stepRun,
          call: toolCallId,
          tool: toolName,
          delta: z.string().max(MAX_DELTA_CHARS),
        })
        .strict(),
      stepOf: ofRun,
    },
    /** The model's complete call `call` of tool `tool` with its parsed input, before the tool runs. A step of its run. */
    'tool.call': {
      schema: z
        .object({ of: z.string(), attempt: z.number().int().min(1), run: stepRun, call: toolCallId, tool: toolName, input: z.unknown() })
        .strict(),
      stepOf: ofRun,
    },
    /**
     * What tool call `call` did, from its effect's record (TOOL_CALL_STATES). Not a step: a call
     * a Stop aborted still gets its outcome. `input` repeats the call's, so a call the reader's
     * cut hid still shows what it was asked to do; `settle` says how an `unknown` one is decided.
     *
     * `awaiting-approval` is the one state that is a step (with `approval`, and `run` as a step
     * has it): the wait lands only while the run is not stopped, so a Stop is either before it
     * (the wait never began: the call shows "Not started") or after it (the Stop ends the wait).
     */
    'tool.state': {
      schema: z
        .object({
          of: z.string(),
          call: toolCallId,
          tool: toolName,
          state: z.enum(TOOL_CALL_STATES),
          input: z.unknown().optional(),
          result: z.unknown().optional(),
          error: z.string().max(2_000).optional(),
          settle: z.enum(['reconcile', 'operator']).optional(),
          /**
           * A running call its receiver made a task of its own (MCP's Tasks extension): the task's id,
           * so a successor after a crash asks about that task (`tasks/get`) rather than calling again.
           */
          task: z.string().min(1).max(256).optional(),
          run: stepRun,
          /**
           * On an attempt's first `awaiting-approval`: what the model call that made its waits cost.
           * That call writes no `finished` (the answer goes on after the decision), and the
           * daily budget counts it here (server/token-budget.ts), decided or not.
           */
          usage: usage.optional(),
          /**
           * A waiting call: its MCP server, the hash of its arguments a decision must name, when it
           * expires as denied (ms since the epoch), and the index of its answer's generate (where the continuation reads from).
           */
          approval: z
            .object({ server: z.string().max(64), args: argsHash, expiresAt: z.number().int(), answerIndex: z.number().int().min(0) })
            .strict()
            .optional(),
        })
        .strict(),
      stepOf: (payload: { of: string; run?: string; state: string }) => (payload.state === 'awaiting-approval' ? ofRun(payload) : undefined),
    },
    /**
     * The user's yes or no to waiting call `call` of answer `of`, from any tab or device of the
     * account; `expired` is the server's (nobody decided in time: a no). Bound to the call's
     * arguments (`args`, their hash as the wait shows it) and to the answer's Stops
     * (`cancelVersion`: how many the deciding page had seen, 0 while it waits): admission
     * (server/admission.ts) refuses one for other arguments, after a Stop, for a call not
     * waiting (decided, replayed), with a typed 4xx and nothing written. The first decision or
     * Stop after the wait, in log order, is the one that counts (answer/approvals.ts).
     */
    'tool.decision': {
      schema: z
        .object({
          of: z.string().max(64),
          call: toolCallId,
          decision: z.enum(['approve', 'deny', 'expired']),
          args: argsHash,
          cancelVersion: z.number().int().min(0),
        })
        .strict(),
      push: true,
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
