/**
 * The conversation a `generate` answers, as model messages, folded from the log with the
 * chat's reducer and trimmed to a context budget: a long or stuffed session cannot send
 * unbounded tokens (finding 1: the whole history went to the model however long it was).
 */
import type { ModelMessage } from 'ai'
import { env } from '@/lib/env'
import type { ChatEvent } from './contract'
import { answerText, foldChat, latestBranch, type ChatState } from './reducer'
import { pathTo } from './versions'

/** A short system prompt; the chat is about whatever the user asks. */
export const SYSTEM_PROMPT =
  'You are a helpful assistant in a2 chat. Answer clearly in Markdown. When the user asks you to remember or save something, call the saveNote tool.'

/**
/**
 * Added to the system prompt when an earlier attempt died mid-answer: the last assistant
 * message is that attempt's committed text, which the reader may already have read.
 */
export const CONTINUE_INSTRUCTION =
  'Your previous answer was interrupted. The last assistant message is the answer so far, already shown to the user: continue it exactly where it stops, without repeating or restarting it.'

/**
 * ~4 characters a token for English text with common tokenizers; a few tokens of framing
 * per message. An estimate that errs large is fine: the budget is a bound, not a target.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4) + 4
}

/**
 * The branch that leads to message `forMessage`, as model messages — other versions (the
 * answer a regenerate follows, the branch an edit left) are left out — newest first within
 * `budgetTokens` less the system prompt's and `answerSoFar`'s share. The message being
 * answered is always kept (the contract bounds it to 16k characters); older turns are
 * dropped whole, and the kept history starts with a user turn. `answerSoFar` (a successor
 * attempt's committed text) ends the list as the assistant's unfinished message, for the
 * model to continue.
 */
export function toModelMessages(state: ChatState, forMessage: string, options: { answerSoFar?: string; budgetTokens?: number } = {}): ModelMessage[] {
  const { answerSoFar = '', budgetTokens = env().A2_CONTEXT_BUDGET_TOKENS } = options
  const relevant = state.turns.some((t) => t.id === forMessage) ? pathTo(state, forMessage) : latestBranch(state.turns)
  const all: Array<{ role: 'user' | 'assistant'; content: string }> = []
  for (const turn of relevant) {
    if (turn.kind === 'user') all.push({ role: 'user', content: turn.text })
    else {
      const text = answerText(turn)
      if (text) all.push({ role: 'assistant', content: text })
    }
  }
  let left = budgetTokens - estimateTokens(SYSTEM_PROMPT) - (answerSoFar ? estimateTokens(answerSoFar) : 0)
  let start = all.length
  while (start > 0) {
    const cost = estimateTokens(all[start - 1].content)
    if (cost > left && start < all.length) break
    left -= cost
    start--
  }
  while (start < all.length - 1 && all[start].role !== 'user') start++
  const messages: ModelMessage[] = all.slice(start)
  if (answerSoFar) messages.push({ role: 'assistant', content: answerSoFar })
  return messages
}

/**
 * The text a generation's earlier attempts committed, as the chat's fold shows it (every
 * attempt's chunks in log order): exactly what a reader may have seen of this answer.
 * `history` is the fold of the log before the generation; `later` what the log holds after it.
 */
export function committedAnswer(history: ChatState, generation: ChatEvent, later: ChatEvent[]): string {
  const ownChunks = later.filter((e) => e.type === 'chunk' && e.payload.of === generation.id)
  const turn = foldChat([generation, ...ownChunks], history).turns.find((t) => t.id === generation.id)
  return turn?.kind === 'assistant' ? answerText(turn) : ''
}
