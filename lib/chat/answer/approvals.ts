/**
 * Tool calls that wait for the user's yes, durably, holding no worker while they wait.
 *
 * The answer's generate run (handler.ts) ends once the model asked for such a call: the call and
 * its wait (`tool.state` `awaiting-approval`, a step, so it lands only before any Stop) are in the
 * log, no `finished` is written, and the run is over. What ends the wait is an event, and each
 * starts a run of this consumer, which applies one rule to the log before its trigger
 * (tools/approval-rule.ts `waitEnding`):
 * - a Stop first: the page shows the answer stopped and the call "Not started" at once (the fold),
 *   and the sweep (approval-expiry.ts) writes the calls' `not-started` and the answer's `finished`;
 * - the decision that leaves no call undecided first: this run continues the answer. An approved
 *   call is dispatched now, through its effect under this run (so a Stop after the decision
 *   reaches it as any Stop reaches a run: the dispatch compare-and-set on this run's
 *   cancel_version); a denied or expired one is told to the model as such; then the model goes
 *   on (handler.ts with this run's scope), streaming into the same answer, and the answer ends.
 * Anything else (a replayed decision, a Stop of an answer that was not waiting) changes nothing.
 *
 * So a wait survives reloads, restarts and a worker's kill -9 (it is the log), and expiry is one
 * more decision (`expired`), appended by the sweep (approval-expiry.ts).
 */
import { consumer, isStop, NotRetryable, type EndedRun, type RunContext } from '@/lib/a2/server'
import type { ChatModel } from '@/lib/ai/model'
import type { LanguageModel } from 'ai'
import { chat, type Chat, type ChatEvent } from '../contract'
import { chatFold } from '../fold/checkpoint'
import { answerOf, waitEnding } from '../tools/approval-rule'
import { reconcileToolCall, runApprovedCall } from '../tools/chat-tools'
import { settledStates, type StoredEffect } from '../tools/stored-effect'
import type { ToolKind } from '../tools/tool-kind'
import { answerHandler, type AnswerModel } from './handler'
import type { FileKind, FileSource } from './file-parts'
import { finishedId } from './unfinished'

type Trigger = 'tool.decision'
type GenerateEvent = Extract<ChatEvent, { type: 'generate' }>

export interface ApprovalsOptions {
  kinds: readonly ToolKind[]
  model: LanguageModel
  takesTools: boolean
  models: readonly ChatModel[]
  storedEffects?: (jobId: number) => Promise<readonly StoredEffect[]>
  /** The kinds of file the default model is sent as files, and where a message's files are read (generate.ts). */
  takesFiles?: readonly FileKind[]
  files?: FileSource
}

export function approvalsConsumer({ kinds, model, takesTools, takesFiles = [], models, storedEffects, files }: ApprovalsOptions) {
  const byId = new Map(models.map((m) => [m.id, m]))
  return consumer({
    contract: chat,
    name: 'approvals',
    // A Stop starts no run here: the sweep ends a wait a Stop ended (approval-expiry.ts), and a continuation's own Stop stops it.
    types: ['tool.decision'],
    // A Stop of the answer stops its continuation.
    abortOn: { cancelled: (event, trigger) => event.payload.of === trigger.payload.of },
    maxAttempts: 3,
    leaseMs: 15_000,
    reconcile: (idempotencyKey, { key }) => reconcileToolCall(key, idempotencyKey, kinds),
    onEnded: onContinuationEnded(storedEffects),
  }).run(async (ctx) => {
    const { state } = await ctx.fold(chatFold)
    const answer = answerOf(state, ctx.event.payload.of)
    const ending = waitEnding(answer, ctx.event)
    if (!answer || ending.ends !== 'decisions') return
    const generate = await generateOf(ctx, answer.id, ending.calls[0].part.approval?.answerIndex)
    const chosen = generate.payload.model
    const choice: AnswerModel | undefined = chosen === undefined ? { model, tools: takesTools, files: takesFiles } : byId.get(chosen)
    if (!choice) throw new NotRetryable(`The model "${chosen}" is no longer offered by this server`, { code: 'model_not_offered' })
    const run = asAnswerRun(ctx, generate)
    // A successor attempt: what its predecessor already wrote of each call stands (a call left running is settled by the handler).
    const later = ctx.attempt > 1 ? ((await ctx.read({ after: ctx.event.index, limit: 10_000 })) as ChatEvent[]) : []
    const stated = new Set(later.flatMap((e) => (e.type === 'tool.state' && e.payload.of === answer.id ? [e.payload.call] : [])))
    for (const { part, decision } of ending.calls) {
      if (stated.has(part.call)) continue
      if (decision !== 'approve') {
        await ctx.append({
          type: 'tool.state',
          payload: { of: answer.id, call: part.call, tool: part.tool, state: decision === 'deny' ? 'denied' : 'expired', input: part.input },
        })
        continue
      }
      const kind = kinds.find((k) => k.name === part.tool)
      if (!kind) {
        await ctx.append({
          type: 'tool.state',
          payload: {
            of: answer.id,
            call: part.call,
            tool: part.tool,
            state: 'failed',
            input: part.input,
            error: 'this tool is no longer configured',
          },
        })
        continue
      }
      // Runs through its effect under this run: not dispatched once a Stop is recorded against it.
      await runApprovedCall({ ctx: run, logCall: async () => !isStop(ctx.signal) }, kind, { call: part.call, input: part.input }).catch((error) => {
        // Its state is written (not started, failed, stopped, unknown); the model is told it. A lost claim ends the attempt.
        if (!isStop(ctx.signal) && ctx.signal.aborted) throw error
      })
    }
    await answerHandler(run, choice, kinds, files, { run: ctx.event.id, stepAttempt: answer.attempt + ctx.attempt, continuing: true })
  })
}

/** The answer's generate event, read where the wait says it is. */
async function generateOf(ctx: RunContext<Chat, Trigger>, of: string, index: number | undefined): Promise<GenerateEvent> {
  const [event] = index === undefined ? [] : ((await ctx.read({ after: index - 1, limit: 1 })) as ChatEvent[])
  if (event?.type !== 'generate' || event.id !== of) throw new NotRetryable(`the answer ${of} the wait names is not in the log`)
  return event
}

/**
 * This run as the answer's: its event is the answer's generate (what the handler answers and
 * writes `of`), folded up to it as the generate was; everything else is this run's own (its
 * signal, its fence, its effects).
 */
function asAnswerRun(ctx: RunContext<Chat, Trigger>, generate: GenerateEvent): RunContext<Chat, 'generate'> {
  return {
    event: generate,
    get signal() {
      return ctx.signal
    },
    attempt: ctx.attempt,
    jobId: ctx.jobId,
    sessionId: ctx.sessionId,
    read: (options) => ctx.read(options),
    fold: (reducer, options) => ctx.fold(reducer, options ?? { before: generate.index }),
    append: (...inputs) => ctx.append(...inputs),
    end: (terminal) => ctx.end(terminal),
    effect: (key, fn, options) => ctx.effect(key, fn, options),
  }
}

/**
 * A continuation that ended without its handler ending it (stopped before it started, drained,
 * out of attempts): its answer still gets its calls' states and its one `finished`. A run that
 * was not the wait's ending (waitEnding says so again) writes nothing.
 */
function onContinuationEnded(storedEffects?: (jobId: number) => Promise<readonly StoredEffect[]>) {
  return async (run: EndedRun<Chat, Trigger>): Promise<void> => {
    const { state } = await run.fold(chatFold)
    const answer = answerOf(state, run.trigger.payload.of)
    const ending = waitEnding(answer, run.trigger)
    if (!answer || ending.ends !== 'decisions') return
    const later = (await run.read({ after: run.trigger.index, limit: 10_000 })) as ChatEvent[]
    if (later.some((e) => e.type === 'finished' && e.payload.of === answer.id)) return
    const last = new Map<string, string>()
    for (const e of later) if (e.type === 'tool.state' && e.payload.of === answer.id) last.set(e.payload.call, e.payload.state)
    const states = storedEffects ? settledStates(answer.id, later, await storedEffects(run.jobId)) : []
    const settled = new Set(states.map((s) => s.call))
    for (const { part } of ending.calls)
      if (!last.has(part.call) && !settled.has(part.call))
        states.push({ of: answer.id, call: part.call, tool: part.tool, state: 'not-started', input: part.input })
    if (states.length > 0) await run.append(...states.map((payload) => ({ type: 'tool.state' as const, payload })))
    const reason = run.status === 'CANCELLED' ? 'cancelled' : run.status === 'FAILED' ? 'error' : 'other'
    await run
      .append({ id: finishedId(run.jobId), type: 'finished', payload: { of: answer.id, attempt: Math.max(1, answer.attempt), reason } })
      .catch((error: unknown) => {
        if (!(error instanceof Error && (error as { code?: string }).code === 'conflict')) throw error
      })
  }
}
