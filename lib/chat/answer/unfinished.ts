/**
 * The `finished` of an answer its handler did not finish: stopped before any worker started it
 * (a Stop 30–60 ms after Send ends it CANCELLED_BEFORE_START), failed out of attempts, or
 * settled by the drain after its worker died. The fold, the usage shown, the daily budget and
 * an export all read `finished`, so every answer's log has exactly one: its id is per job
 * (`finishedId`), the one the handler's own `finished` carries, so a second write of it is the
 * same event (the log answers it as a duplicate) or refused as a conflict, never a second one.
 */
import { A2Error } from '@/lib/a2'
import type { EndedRun } from '@/lib/a2/server'
import { countPrompt, countText, type Usage } from '@/lib/ai/usage'
import { chatFold } from '../fold/checkpoint'
import type { Chat, ChatEvent, FinishReason } from '../contract'
import { SYSTEM_PROMPT, committedTurn, toModelMessages } from './history'
import { answerText } from '../fold/reducer'
import { partText } from '../fold/parts'
import { settledStates, type StoredEffect } from '../tools/stored-effect'
import { anyToolCallKey } from '../tools/tool-call'

/** The one id of the `finished` of a job's answer: the handler's and the `onEnded` hook's. */
export const finishedId = (jobId: number) => `finished-${jobId}`

/**
 * The consumer's `onEnded` hook: the calls the answer still shows running get their state from their stored
 * effects (the drain asked their receivers before it settled the run), then the one `finished`.
 * `storedEffects` reads the run's effects (the server's operator view).
 */
export function onAnswerEnded(storedEffects?: (jobId: number) => Promise<readonly StoredEffect[]>) {
  return async (run: EndedRun<Chat, 'generate'>): Promise<void> => {
    if (storedEffects && anyToolCallKey(run.dispatched)) {
      const later = (await run.read({ after: run.trigger.index, limit: 10_000 })) as ChatEvent[]
      const states = settledStates(run.trigger.id, later, await storedEffects(run.jobId))
      if (states.length > 0) await run.append(...states.map((payload) => ({ type: 'tool.state' as const, payload })))
    }
    await writeMissingFinished(run)
  }
}

export async function writeMissingFinished(run: EndedRun<Chat, 'generate'>): Promise<void> {
  const reason: FinishReason = run.status === 'CANCELLED' ? 'cancelled' : run.status === 'FAILED' ? 'error' : 'other'
  try {
    await run.append({
      id: finishedId(run.jobId),
      type: 'finished',
      // A run the drain stopped before any claim is at attempt 0; the contract counts from 1.
      payload: { of: run.trigger.id, attempt: Math.max(1, run.attempt), reason, usage: await usageOf(run) },
    })
  } catch (error) {
    // The handler's own `finished` (same id, its own payload) is there: the answer has its one.
    if (error instanceof A2Error && error.code === 'conflict') return
    throw error
  }
}

/**
 * Never dispatched: nothing was sent, nothing billed (zero). Dispatched by an attempt that
 * did not finish: its prompt as sent (the history before the trigger, as the handler builds it;
 * a successor's continuation instruction is not counted) and the answer's committed parts.
 */
async function usageOf(run: EndedRun<Chat, 'generate'>): Promise<Usage> {
  if (!run.dispatched.includes('model')) return { inputTokens: 0, outputTokens: 0, counted: true }
  const { state: history } = await run.fold(chatFold)
  const later = (await run.read({ after: run.trigger.index, limit: 10_000 })) as ChatEvent[]
  const answer = committedTurn(history, run.trigger as ChatEvent, later)
  // Every part the model streamed is billed: the reasoning and the tools' input as well as the text.
  const streamed = answer ? [answerText(answer), ...answer.parts.map(partText)] : []
  return {
    inputTokens: countPrompt(SYSTEM_PROMPT, toModelMessages(history, run.trigger.payload.for)),
    outputTokens: streamed.reduce((tokens, text) => tokens + countText(text), 0),
    counted: true,
  }
}
