/** The conversation a `generate` answers, as model messages, folded from the log with the chat's reducer. */
import type { ModelMessage } from 'ai'
import type { ChatEvent } from './contract'
import { answerText, foldChat } from './reducer'

/** A short system prompt; the chat is about whatever the user asks. */
export const SYSTEM_PROMPT =
  'You are a helpful assistant in a2 chat. Answer clearly in Markdown. When the user asks you to remember or save something, call the saveNote tool.'

/** History up to and including message `forMessage`: later turns (a regenerate's old answer) are left out. */
export function toModelMessages(history: ChatEvent[], forMessage: string): ModelMessage[] {
  const { turns } = foldChat(history)
  const end = turns.findIndex((t) => t.kind === 'user' && t.id === forMessage)
  const relevant = end === -1 ? turns : turns.slice(0, end + 1)
  const messages: ModelMessage[] = []
  for (const turn of relevant) {
    if (turn.kind === 'user') messages.push({ role: 'user', content: turn.text })
    else {
      const text = answerText(turn)
      if (text) messages.push({ role: 'assistant', content: text })
    }
  }
  return messages
}
