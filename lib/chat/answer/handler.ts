/**
 * One attempt of the `generate` consumer (generate.ts), top to bottom: the prompt (the history,
 * and for a successor or a Continue the answer so far), the model call as an effect under the
 * run's signal (its stream into the log: stream-loop.ts), then the answer's end (end-answer.ts).
 *
 * A Stop (the signal fires, or the log refuses a step) is the outcome, not a failure: what the
 * reader saw stays, the rest is cut by the reducer, and the run ends CANCELLED. Anything else (a
 * lost claim, a model error) propagates, so the runtime surrenders or retries the attempt.
 */
import { isStepCount, streamText, type LanguageModel, type ModelMessage } from 'ai'
import { isA2Error } from '@/lib/a2'
import { isStop, readAll, type RunContext } from '@/lib/a2/server'
import { answerUsage } from '@/lib/ai/usage'
import { env } from '@/lib/env'
import { argsHash } from '../tools/approval-args'
import { FINISH_REASONS, type Chat, type ChatEvent, type FinishReason } from '../contract'
import { chatFold } from '../fold/checkpoint'
import { chatTools } from '../tools/chat-tools'
import { settleInFlight } from '../tools/settle-in-flight'
import type { ToolCall } from '../tools/tool-call'
import type { ToolKind } from '../tools/tool-kind'
import { chunkWriter, type ChunkWriter } from './chunk-writer'
import { withFileContents, type FileKind, type FileSource } from './file-parts'
import { CONTINUE_INSTRUCTION, SYSTEM_PROMPT, callsSoFar, committedAnswer, toModelMessages } from './history'
import { modelErrorLine } from './model-failure'
import { restatementFilter } from './restatement'
import { stepEvents, type AnswerStep } from './steps'
import { streamLoop } from './stream-loop'
import { endAnswer } from './end-answer'

type Run = RunContext<Chat, 'generate'>

/** The model that answers this generate, and whether it is sent tools. */
export interface AnswerModel {
  model: LanguageModel
  tools: boolean
  /** The kinds of file it is sent as files (its configuration's `files`); others go as text (file-parts.ts). */
  files?: readonly FileKind[]
}

/**
 * Whose steps these are: the answer's own generate (the default), or a continuation after a
 * decision on a call that waited (answer/approvals.ts), which streams into the same answer.
 */
export interface AnswerScope {
  /** The continuation's trigger (its `tool.decision`'s id): its steps carry it, so a Stop of it refuses them. */
  run?: string
  /** The attempt its steps carry: past every earlier attempt's of the answer, so the fold keeps them. */
  stepAttempt: number
  /** It goes on from the answer so far: the model is sent the answer's text and its calls with what each did. */
  continuing: boolean
}

/** How an attempt ended: the answer got its `finished`, or it waits for a decision on calls that need approval (no `finished` yet). */
export type AnswerOutcome = 'ended' | 'waiting'

/** What this attempt sent and what the model streamed back, every delta: a Stop's answer is billed from these. */
interface Billing {
  /** Unset until the model call is dispatched: a Stop before it costs nothing. */
  sent?: { instructions: string; messages: ModelMessage[] }
  streamed: string
}

export async function answerHandler(
  ctx: Run,
  { model, tools: takesTools, files: takesFiles = [] }: AnswerModel,
  kinds: readonly ToolKind[],
  storedFiles: FileSource = noFiles,
  scope: AnswerScope = { stepAttempt: ctx.attempt, continuing: false },
): Promise<AnswerOutcome> {
  const { writer, writeFailed } = answerWriter(ctx, scope)
  const billing: Billing = { streamed: '' }
  // A tool call's step is pushed once, by whichever comes first: the stream's `tool-call`
  // part or the tool's execute (which must see it in the log before the tool runs).
  const logged = new Set<string>()
  /** The calls of kinds that wait for approval, in the order the model made them: this attempt's waits. */
  const toWait: ToolCall[] = []
  const approvals = new Map(kinds.flatMap((kind) => (kind.approval ? [[kind.name, kind.approval] as const] : [])))
  const logCall = (call: ToolCall) => {
    if (logged.has(call.call)) return
    logged.add(call.call)
    writer.add({ type: 'tool.call', call: call.call, tool: call.tool, input: call.input })
    if (approvals.has(call.tool)) toWait.push(call)
  }
  // Tool calls still running: the attempt's end waits for their states to be written.
  const running = new Set<Promise<unknown>>()
  const tools = chatTools(
    {
      ctx,
      logCall: async (call) => {
        logCall(call)
        await writer.flush()
        return !writer.refused
      },
    },
    kinds,
  )

  try {
    const prompt = await promptOf(ctx, scope, takesFiles, storedFiles, kinds)
    // A successor of an attempt that died once its wait was in the log: the answer waits; nothing more to do.
    if (prompt === 'waiting') return 'waiting'
    const { soFar, instructions, messages } = prompt
    const outcome = await ctx.effect(
      'model',
      async (idempotencyKey, signal) => {
        billing.sent = { instructions, messages }
        const result = streamText({
          model,
          instructions,
          messages,
          abortSignal: AbortSignal.any([signal, writeFailed.signal]),
          headers: { 'Idempotency-Key': idempotencyKey },
          tools: takesTools ? tracked(tools, running) : undefined,
          stopWhen: isStepCount(3),
          maxRetries: 0, // a2 owns retries: a retried attempt is visible and fenced
          // One line per failed call (the SDK's default prints the whole error object); the stream's error part decides the outcome.
          onError: ({ error }) => console.error(`[a2] generate ${ctx.event.id} attempt ${ctx.attempt}: ${modelErrorLine(error)}`),
        })
        // The outcome comes from the stream's own `finish` part: `result.finishReason` and
        // `result.totalUsage` would tee the stream once more and drain it again after the
        // end (in the bench at 100 streams, a second pass over every token on the busy worker).
        // A model that ignores "continue" and starts over: its restatement of the answer so far is dropped (restatement.ts).
        const text = restatementFilter(soFar, (delta) => writer.add({ type: 'chunk', delta }))
        const sink = { writer, text, logCall, generated: (delta: string) => void (billing.streamed += delta) }
        const finish = await streamLoop(result.stream, sink, { signal, writeFailed: writeFailed.signal })
        text.end()
        await settled(running)
        const usage = answerUsage(finish.totalUsage, billing.sent, billing.streamed)
        // The calls that need the user's yes wait, as steps: refused (with the rest) once a Stop is
        // recorded, so a wait either lands before any Stop or not at all (answer/approvals.ts).
        // This call writes no `finished` then: its cost rides on the first wait, so it is counted once either way.
        const { A2_APPROVAL_TIMEOUT_MS: timeout } = env()
        toWait.forEach((call, i) => {
          const approval = {
            server: approvals.get(call.tool)!.server,
            args: argsHash(call.input),
            expiresAt: Date.now() + timeout,
            answerIndex: ctx.event.index,
          }
          writer.add({ type: 'tool.wait', call: call.call, tool: call.tool, input: call.input, approval, ...(i === 0 && { usage }) })
        })
        await writer.flush()
        return { finishReason: normalizeReason(finish.finishReason), usage, waiting: toWait.length > 0 && !writer.refused }
        // Two of these calls at once do no harm: each one's text reaches the log only through
        // its own attempt's appends, and a superseded attempt's are refused. So a worker judged
        // dead mid-answer is taken over at once (OWNER_DIED, ~0.5 s), not after its 15 s lease.
      },
      { overlapSafe: true },
    )
    // The wait is in the log, before any Stop: the answer is not over, and from here on a Stop or a
    // decision ends the wait, in its own run (approvals.ts). This run ends and holds no worker.
    if (outcome.waiting) return 'waiting'
    // The model got to its end, but a Stop was recorded meanwhile: the answer was stopped.
    await endAnswer(ctx, writer.refused || isStop(ctx.signal) ? 'cancelled' : outcome.finishReason, outcome.usage, scope.stepAttempt)
    return 'ended'
  } catch (error) {
    if (isStop(ctx.signal, error) || writer.refused) {
      writer.drop()
      // A tool call cut off by the Stop writes its state (asked of its receiver) before the answer ends.
      await settled(running)
      // The aborted request reported nothing: what it cost is counted (lib/ai/usage.ts).
      await endAnswer(ctx, 'cancelled', answerUsage(undefined, billing.sent, billing.streamed), scope.stepAttempt)
      return 'ended'
    }
    // The chat holds its limit of events: the answer ends with what reached the log (its `finished` is no step, so it lands).
    if (isA2Error(writeFailed.signal.reason, 'session_full')) {
      await endAnswer(ctx, 'session_full', answerUsage(undefined, billing.sent, billing.streamed), scope.stepAttempt)
      return 'ended'
    }
    throw error
  }
}

/**
 * The one writer every part the model streams goes through (text, reasoning, tool input, tool
 * calls), in the order it came: one ordered stream of steps, so one cut applies to all.
 *
 * A failed chunk write (the store went away, the attempt was fenced) stops the model now
 * (`writeFailed`): streaming the rest of the answer to nowhere would cost tokens and freeze the
 * view. So does a refused one (run_cancelled): a Stop is recorded that this attempt has not heard
 * of yet (its NOTIFY lost or on its way); otherwise the model would stream on to its end and the
 * answer finish 'stop' under a CANCELLED run (refused-chunk.integration.test.ts).
 */
function answerWriter(ctx: Run, scope: AnswerScope): { writer: ChunkWriter<AnswerStep>; writeFailed: AbortController } {
  const writeFailed = new AbortController()
  const writer = chunkWriter<AnswerStep>(
    async (steps) => {
      try {
        await ctx.append(...stepEvents(steps, ctx.event.id, scope.stepAttempt, scope.run))
      } catch (error) {
        if (isA2Error(error, 'run_cancelled')) writeFailed.abort(error)
        throw error
      }
    },
    (error) => writeFailed.abort(error),
  )
  return { writer, writeFailed }
}

/** What the model is sent: the conversation before this generation and, for a successor or a Continue, the answer so far. */
async function promptOf(
  ctx: Run,
  scope: AnswerScope,
  takesFiles: readonly FileKind[],
  storedFiles: FileSource,
  kinds: readonly ToolKind[],
): Promise<{ soFar: string; instructions: string; messages: ModelMessage[] } | 'waiting'> {
  // The conversation before this generation, from the newest checkpoint of the fold: a
  // session of 100k events costs what a short one does (folding them all held the
  // worker's loop past the 15 s lease).
  const { state: history } = await ctx.fold(chatFold)
  // A successor attempt, a Continue (which starts from the stopped answer's cut, as the fold shows it), or a continuation after a decision.
  const continuing = ctx.attempt > 1 || ctx.event.payload.continues !== undefined || scope.continuing
  let own = continuing ? await readOwnSteps(ctx) : []
  if (ctx.attempt > 1 && own.some((e) => isOwnWait(e, ctx.event.id, scope.run))) return 'waiting'
  // A successor first settles the calls its dead predecessor left running (asked of their receivers), then tells the model of them.
  if (ctx.attempt > 1 && (await settleInFlight(ctx, own, kinds))) own = await readOwnSteps(ctx)
  const soFar = continuing ? committedAnswer(history, ctx.event, own) : ''
  // The calls the answer shows so far, with what each did: a successor's predecessors' and, for a
  // Continue, the stopped version's as the reader saw them (the fold carries them over), so the
  // model is not left to make a call again that happened (continue-tools.integration.test.ts).
  const calls = continuing ? callsSoFar(history, ctx.event, own) : []
  // Files' text gets at most half the context budget (~4 characters a token), shared among them.
  const messages = await withFileContents(
    toModelMessages(history, ctx.event.payload.for, { answerSoFar: soFar, callsSoFar: calls }),
    takesFiles,
    storedFiles,
    env().A2_CONTEXT_BUDGET_TOKENS * 2,
  )
  const instructions = soFar ? `${SYSTEM_PROMPT}\n\n${CONTINUE_INSTRUCTION}` : SYSTEM_PROMPT
  return { soFar, instructions, messages }
}

/** A wait this run put in the log (an earlier attempt of it, which died after). */
function isOwnWait(event: ChatEvent, of: string, run: string | undefined): boolean {
  return event.type === 'tool.state' && event.payload.state === 'awaiting-approval' && event.payload.of === of && event.payload.run === run
}

/** The session's log after this generation, read in pages: where earlier attempts' chunks are. */
function readOwnSteps(ctx: Run): Promise<ChatEvent[]> {
  return readAll<ChatEvent>(ctx.read, { after: ctx.event.index })
}

/** The tools with each execute's promise kept in `running` until it settles. */
function tracked(tools: ReturnType<typeof chatTools>, running: Set<Promise<unknown>>): ReturnType<typeof chatTools> {
  return Object.fromEntries(
    Object.entries(tools).map(([name, t]) => [
      name,
      {
        ...t,
        execute: (input: unknown, options: unknown) => {
          const call = Promise.resolve((t.execute as (input: unknown, options: unknown) => Promise<unknown>)(input, options))
          running.add(call)
          void call.catch(() => undefined).finally(() => running.delete(call))
          return call
        },
      },
    ]),
  )
}

/** Waits until every tool call in `running` has settled (their outcomes and states written). */
async function settled(running: Set<Promise<unknown>>): Promise<void> {
  while (running.size > 0) await Promise.allSettled([...running])
}

/** The model's reason, if the contract knows it; 'cancelled' (a Stop) and 'session_full' are ours to say, never the model's. */
function normalizeReason(reason: string): FinishReason {
  return reason !== 'cancelled' && reason !== 'session_full' && (FINISH_REASONS as readonly string[]).includes(reason)
    ? (reason as FinishReason)
    : 'other'
}

/** No file store (a test's consumer without one): every file reads as no longer available. */
const noFiles: FileSource = { read: async () => undefined }
