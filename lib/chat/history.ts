/**
 * The conversation a `generate` answers, as model messages, folded from the log with the
 * chat's reducer and trimmed to a context budget: a long or stuffed session cannot send
 * unbounded tokens (finding 1: the whole history went to the model however long it was).
 */
import type { ModelMessage } from 'ai'
import { env } from '@/lib/env'
import type { ChatEvent } from './contract'
import { answerText, foldChat } from './reducer'

/** A short system prompt; the chat is about whatever the user asks. */
export const SYSTEM_PROMPT =
  'You are a helpful assistant in a2 chat. Answer clearly in Markdown. When the user asks you to remember or save something, call the saveNote tool.'

/**
 * ~4 characters a token for English text with common tokenizers; a few tokens of framing
 * per message. An estimate that errs large is fine: the budget is a bound, not a target.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4) + 4
}

/**
 * History up to and including message `forMessage` (later turns, a regenerate's old answer,
 * are left out), newest first within `budgetTokens` less the system prompt's share. The
 * message being answered is always kept (the contract bounds it to 16k characters); older
 * turns are dropped whole, and the kept history starts with a user turn.
 */
export function toModelMessages(history: ChatEvent[], forMessage: string, budgetTokens = env().A2_CONTEXT_BUDGET_TOKENS): ModelMessage[] {
  const { turns } = foldChat(history)
  const end = turns.findIndex((t) => t.kind === 'user' && t.id === forMessage)
  const relevant = end === -1 ? turns : turns.slice(0, end + 1)
  const all: Array<{ role: 'user' | 'assistant'; content: string }> = []
  for (const turn of relevant) {
    if (turn.kind === 'user') all.push({ role: 'user', content: turn.text })
    else {
      const text = answerText(turn)
      if (text) all.push({ role: 'assistant', content: text })
    }
  }
  let left = budgetTokens - estimateTokens(SYSTEM_PROMPT)
  let start = all.length
  while (start > 0) {
    const cost = estimateTokens(all[start - 1].content)
    if (cost > left && start < all.length) break
    left -= cost
    start--
  }
  while (start < all.length - 1 && all[start].role !== 'user') start++
  return all.slice(start)
}
