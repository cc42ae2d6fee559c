/**
 * The `generate` consumer: answers a message by streaming the model into the log.
 *
 * The model call runs under ctx.signal, so a Stop (a `cancelled` event naming this
 * generation) closes the upstream request. It goes through ctx.effect, so it is never
 * dispatched for a run already cancelled, and a crash leaves a record to reconcile.
 * One attempt, top to bottom, is handler.ts; the model's stream into the log, stream-loop.ts.
 *
 * A successor attempt (after one died mid-answer) continues from the text its predecessors
 * committed: it sends that text to the model as the answer so far, drops it again if the model
 * starts over instead of continuing (restatement.ts), and the fold shows every attempt's chunks
 * in log order, so the reader sees one answer and loses nothing they read.
 */
import type { LanguageModel } from 'ai'
import { consumer, NotRetryable } from '@/lib/a2/server'
import type { ChatModel } from '@/lib/ai/model'
import { chat } from '../contract'
import { reconcileToolCall, toolKinds, type ChatToolConfig } from '../tools/chat-tools'
import type { StoredEffect } from '../tools/stored-effect'
import { answerHandler, type AnswerModel } from './handler'
import type { FileSource } from './file-parts'
import { onAnswerEnded } from './unfinished'

export interface GenerateOptions extends ChatToolConfig {
  /** Answers a generate that names no model. */
  model: LanguageModel
  /** The model's configured capability (lib/ai/model-list.ts): false sends no tools, for a server that refuses them. Default true. */
  takesTools?: boolean
  /** The kinds of file that model is sent as files (its configuration's `files`); none: all as text. */
  takesFiles?: readonly ('image' | 'pdf')[]
  /** Where a message's files are read (the app's files in this store); unset: none can be read. */
  files?: FileSource
  /** Every configured model, built once (lib/ai/model.ts selectModels): a generate's `model` names the one that answers it. */
  models?: readonly ChatModel[]
  /** A run's stored effects (the server's operator view): how a run settled without its handler tells its calls' states. */
  storedEffects?: (jobId: number) => Promise<readonly StoredEffect[]>
}

export function generateConsumer({ model, takesTools = true, takesFiles = [], models = [], storedEffects, files, ...toolConfig }: GenerateOptions) {
  const byId = new Map(models.map((m) => [m.id, m]))
  const kinds = toolKinds(toolConfig)
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
    reconcile: (idempotencyKey, { key }) => reconcileToolCall(key, idempotencyKey, kinds),
    // An answer this handler did not finish still gets its one `finished`, and its calls left running their settled states (unfinished.ts).
    onEnded: onAnswerEnded(storedEffects),
  }).run(async (ctx) => {
    const chosen = ctx.event.payload.model
    const choice: AnswerModel | undefined = chosen === undefined ? { model, tools: takesTools, files: takesFiles } : byId.get(chosen)
    // Admission checked the id against the list; a list changed since (a restart with another A2_MODELS) fails it plainly, once.
    if (!choice) throw new NotRetryable(`The model "${chosen}" is no longer offered by this server`, { code: 'model_not_offered' })
    await answerHandler(ctx, choice, kinds, files)
  })
}
