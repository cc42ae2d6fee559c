/**
 * The `generate` consumer: answers a message by streaming the model into the log.
 *
 * The model call runs under ctx.signal, so a Stop (a `cancelled` event naming this
 * generation) closes the upstream request. It goes through ctx.effect, so it is never
 * dispatched for a run already cancelled, and a crash leaves a record to reconcile.
 *
 * A successor attempt (after one died mid-answer) continues from the text its predecessors
 * committed: it sends that text to the model as the answer so far, drops it again if the model
 * starts over instead of continuing (restatement.ts), and the fold shows every attempt's chunks
 * in log order, so the reader sees one answer and loses nothing they read.
 */
import { isStepCount, streamText, type LanguageModel, type ModelMessage } from 'ai'
import { answerUsage, type Usage } from '@/lib/ai/usage'
import { isA2Error } from '@/lib/a2'
import { consumer, isStop, NotRetryable, readAll, type RunContext } from '@/lib/a2/server'
import type { ChatModel } from '@/lib/ai/model'
import { chat, FINISH_REASONS, type Chat, type ChatEvent, type FinishReason } from './contract'
import { chunkWriter } from './chunk-writer'
import { stepEvents, type AnswerStep } from './steps'
import { chatTools, reconcileToolCall } from './tools/chat-tools'
import type { ToolCall } from './tools/tool-call'
import type { Webhook } from './tools/webhook'
import type { McpTools } from './tools/mcp'
import { restatementFilter } from './restatement'
import { endingHook, finishedId } from './ending'
import type { StoredEffect } from './tools/stored-effect'
import { chatFold } from './checkpoint'
import { CONTINUE_INSTRUCTION, SYSTEM_PROMPT, callsSoFar, committedAnswer, toModelMessages } from './history'
import { settleInFlight } from './tools/settle-in-flight'
import type { NoteOutbox } from './notes'
import { modelErrorLine, modelFailure } from './model-failure'

export interface GenerateOptions {
  /** Answers a generate that names no model. */
  model: LanguageModel
  notes: NoteOutbox
  /** The model's configured capability (lib/ai/model-list.ts): false sends no tools, for a server that refuses them. Default true. */
  takesTools?: boolean
  /** Every configured model, built once (lib/ai/model.ts selectModels): a generate's `model` names the one that answers it. */
  models?: readonly ChatModel[]
  /** Where the sendWebhook tool delivers (A2_WEBHOOK_URL); unset, the tool is not offered. */
  webhook?: Webhook
  mcp?: McpTools
  /** A run's stored effects (the server's operator view): how a run settled without its handler tells its calls' states. */
  storedEffects?: (jobId: number) => Promise<readonly StoredEffect[]>
}

export function generateConsumer({
  model: defaultModel,
  notes,
  takesTools: defaultTakesTools = true,
  models = [],
  webhook,
  mcp,
  storedEffects,
}: GenerateOptions) {
  const byId = new Map(models.map((m) => [m.id, m]))
  return consumer({
    contract: chat,
    name: 'generate',
    types: ['generate'],
    // Only the Stop that names this generation interrupts it; a session has many.
    abortOn: { cancelled: (event, trigger) => event.payload.of === trigger.id },
    maxAttempts: 3,
    // 15 s, renewed every 5 s: a dead worker's answer resumes within ~15 s, while a GC
    // pause or a slow commit of a few seconds never costs a live stream its claim.
    leaseMs: 15_000,
    // Asked for every effect a dead attempt left DISPATCHED (by a successor, a drain after a
    // Stop, the last attempt's crash), with the key its fn received. A saved note is looked
    // up; a model call changed nothing outside the log, so asking again is safe: "not done".
    reconcile: (idempotencyKey, { key }) => reconcileToolCall(key, idempotencyKey, { notes, webhook, mcp }),
    // An answer this handler did not finish still gets its one `finished`, and its calls left running their settled states (ending.ts).
    ending: endingHook(storedEffects),
  }).run(async (ctx) => {
    const of = ctx.event.id
    const chosen = ctx.event.payload.model
    const choice = chosen === undefined ? { model: defaultModel, tools: defaultTakesTools } : byId.get(chosen)
    // Admission checked the id against the list; a list changed since (a restart with another A2_MODELS) fails it plainly, once.
    if (!choice) throw new NotRetryable(`The model "${chosen}" is no longer offered by this server`, { code: 'model_not_offered' })
    const { model, tools: takesTools } = choice
    // A failed chunk write (the store went away, the attempt was fenced) stops the model
    // now: streaming the rest of the answer to nowhere would cost tokens and freeze the view.
    // So does a refused one (run_cancelled): a Stop is recorded that this attempt has not heard
    // of yet (its NOTIFY lost or on its way); otherwise the model would stream on to its end and
    // the answer finish 'stop' under a CANCELLED run (refused-chunk.integration.test.ts).
    const writeFailed = new AbortController()
    // Every part the model streams (text, reasoning, tool input, tool calls) goes through this
    // one writer, in the order it came: one ordered stream of steps, so one cut applies to all.
    const writer = chunkWriter<AnswerStep>(
      async (steps) => {
        try {
          await ctx.append(...stepEvents(steps, of, ctx.attempt))
        } catch (error) {
          if (isA2Error(error, 'run_cancelled')) writeFailed.abort(error)
          throw error
        }
      },
      (error) => writeFailed.abort(error),
    )
    // One id per job: an answer has one `finished`, whichever of its attempts or the ending hook writes it.
    const finish = (reason: FinishReason, usage: Usage) =>
      ctx.append({ id: finishedId(ctx.jobId), type: 'finished', payload: { of, attempt: ctx.attempt, reason, usage } }).catch((error) => {
        // An earlier attempt's `finished` is in the log (it died before its run ended): the answer has its one.
        if (!isA2Error(error, 'conflict')) throw error
      })
    // What this attempt sent and what the model streamed back, every delta (cut, restated or
    // not): a Stop's answer is billed from these, as the provider bills the aborted request.
    // Unset until the model call is dispatched: a Stop before it costs nothing.
    let sent: { instructions: string; messages: ModelMessage[] } | undefined
    let streamed = ''
    // A tool call's step is pushed once, by whichever comes first: the stream's `tool-call`
    // part or the tool's execute (which must see it in the log before the tool runs).
    const logged = new Set<string>()
    const pushCall = ({ call, tool, input }: ToolCall) => {
      if (logged.has(call)) return
      logged.add(call)
      writer.push({ type: 'tool.call', call, tool, input })
    }
    // Tool calls still running: the attempt's end waits for their states to be written.
    const running = new Set<Promise<unknown>>()
    const tools = chatTools(
      {
        ctx,
        logCall: async (call) => {
          pushCall(call)
          await writer.flush()
          return !writer.refused
        },
      },
      { notes, webhook, mcp },
    )
    const toolNames = new Map<string, string>()

    try {
      // The conversation before this generation, from the newest checkpoint of the fold: a
      // session of 100k events costs what a short one does (folding them all held the
      // worker's loop past the 15 s lease).
      const { state: history } = await ctx.fold(chatFold)
      // A successor attempt, or a Continue (which starts from the stopped answer's cut, as the fold shows it).
      const continuing = ctx.attempt > 1 || ctx.event.payload.continues !== undefined
      let own = continuing ? await readOwnSteps(ctx) : []
      // A successor first settles the calls its dead predecessor left running (asked of their receivers), then tells the model of them.
      if (ctx.attempt > 1 && (await settleInFlight(ctx, own))) own = await readOwnSteps(ctx)
      const soFar = continuing ? committedAnswer(history, ctx.event, own) : ''
      const calls = ctx.attempt > 1 ? callsSoFar(history, ctx.event, own) : []
      const messages = toModelMessages(history, ctx.event.payload.for, { answerSoFar: soFar, callsSoFar: calls })
      const instructions = soFar ? `${SYSTEM_PROMPT}\n\n${CONTINUE_INSTRUCTION}` : SYSTEM_PROMPT
      const outcome = await ctx.effect(
        'model',
        async (idempotencyKey, signal) => {
          sent = { instructions, messages }
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
            onError: ({ error }) => console.error(`[a2] generate ${of} attempt ${ctx.attempt}: ${modelErrorLine(error)}`),
          })
          // The outcome comes from the stream's own `finish` part: `result.finishReason` and
          // `result.totalUsage` would tee the stream once more and drain it again after the
          // end (in the bench at 100 streams, a second pass over every token on the busy worker).
          // A model that ignores "continue" and starts over: its restatement of the answer so far is dropped (restatement.ts).
          const text = restatementFilter(soFar, (delta) => writer.push({ type: 'chunk', delta }))
          let finish: { finishReason: string; totalUsage: { inputTokens?: number; outputTokens?: number } } | undefined
          for await (const part of result.stream) {
            if (part.type === 'text-delta') {
              streamed += part.text
              text.push(part.text)
              // The store is away and the backlog is full (chunk-writer.ts): hold the model back.
              await writer.room()
            } else if (part.type === 'reasoning-delta') {
              // Reasoning and tool input are billed like text: the model generated them.
              streamed += part.text
              writer.push({ type: 'reasoning', delta: part.text })
              await writer.room()
            } else if (part.type === 'tool-input-start') toolNames.set(part.id, part.toolName)
            else if (part.type === 'tool-input-delta') {
              streamed += part.delta
              writer.push({ type: 'tool.input', call: part.id, tool: toolNames.get(part.id) ?? 'unknown', delta: part.delta })
              await writer.room()
            } else if (part.type === 'tool-call') pushCall({ call: part.toolCallId, tool: part.toolName, input: part.input })
            else if (part.type === 'finish') finish = part
            // A refusal (a 4xx) is thrown as NotRetryable: the same request would get it again.
            else if (part.type === 'error') throw modelFailure(part.error)
            else if (part.type === 'abort') throw signal.reason ?? writeFailed.signal.reason ?? new Error('aborted')
          }
          if (!finish) throw new Error('the model stream ended without a finish')
          text.end()
          await settled(running)
          await writer.flush()
          return { finishReason: normalizeReason(finish.finishReason), usage: answerUsage(finish.totalUsage, sent, streamed) }
          // Two of these calls at once do no harm: each one's text reaches the log only through
          // its own attempt's appends, and a superseded attempt's are refused. So a worker judged
          // dead mid-answer is taken over at once (OWNER_DIED, ~0.5 s), not after its 15 s lease.
        },
        { overlapSafe: true },
      )
      // The model got to its end, but a Stop was recorded meanwhile: the answer was stopped.
      await finish(writer.refused || isStop(ctx.signal) ? 'cancelled' : outcome.finishReason, outcome.usage)
    } catch (error) {
      // A user's Stop is the outcome, not a failure: what they saw stays, the rest is cut by
      // the reducer; the run ends CANCELLED. Anything else (a lost claim, a model error)
      // propagates so the runtime surrenders or retries it.
      if (isStop(ctx.signal, error) || writer.refused) {
        writer.drop()
        // A tool call cut off by the Stop writes its state (asked of its receiver) before the answer ends.
        await settled(running)
        // The aborted request reported nothing: what it cost is counted (lib/ai/usage.ts).
        await finish('cancelled', answerUsage(undefined, sent, streamed))
        return
      }
      // The chat holds its limit of events: the answer ends with what reached the log (its `finished` is no step, so it lands).
      if (isA2Error(writeFailed.signal.reason, 'session_full')) {
        await finish('session_full', answerUsage(undefined, sent, streamed))
        return
      }
      throw error
    }
  })
}

/** The session's log after this generation, read in pages: where earlier attempts' chunks are. */
function readOwnSteps(ctx: RunContext<Chat, 'generate'>): Promise<ChatEvent[]> {
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
