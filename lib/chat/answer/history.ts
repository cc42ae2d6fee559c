/**
 * The conversation a `generate` answers, as model messages, folded from the log with the
 * chat's reducer and trimmed to a context budget: a long or stuffed session cannot send
 * unbounded tokens (finding 1: the whole history went to the model however long it was).
 */
import type { ModelMessage } from 'ai'
import { env } from '@/lib/env'
import type { ChatEvent } from '../contract'
import { answerText, foldChat, latestBranch, type AnswerTurn, type ChatState, type Turn } from '../fold/reducer'
import { pathTo } from '../fold/versions'
import { answerMessages } from './answer-messages'
import { userMessage } from './file-parts'

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
 * `budgetTokens` less the system prompt's and `answerSoFar`'s share; an earlier answer's tool
 * calls and their results are sent with it (answer-messages.ts) and counted. The message being
 * answered is always kept (the contract bounds it to 16k characters); older turns are
 * dropped whole, and the kept history starts with a user turn. `answerSoFar` (a successor
 * attempt's committed text) ends the list as the assistant's unfinished message, for the
 * model to continue, after `callsSoFar` (the tool calls its predecessors made, with what each did).
 *
 * The branch is walked back from the message only as far as the budget needs: at 100k
 * events (9k turns) building the whole branch first cost 7 ms per answer, at 50k user
 * messages 40 ms, for the ~8k tokens kept.
 */
export function toModelMessages(
  state: ChatState,
  forMessage: string,
  options: { answerSoFar?: string; callsSoFar?: ModelMessage[]; budgetTokens?: number } = {},
): ModelMessage[] {
  const { answerSoFar = '', callsSoFar = [], budgetTokens = env().A2_CONTEXT_BUDGET_TOKENS } = options
  let left =
    budgetTokens -
    estimateTokens(SYSTEM_PROMPT) -
    (answerSoFar ? estimateTokens(answerSoFar) : 0) -
    callsSoFar.reduce((sum, message) => sum + messageTokens(message), 0)
  // Each turn's messages (an answer with tool calls is up to three), newest turn first: a turn is kept or dropped whole.
  const newestFirst: ModelMessage[][] = []
  for (const turn of branchBackwards(state, forMessage)) {
    const group: ModelMessage[] = turn.kind === 'user' ? [userMessage(turn)] : answerMessages(turn)
    if (group.length === 0) continue
    const cost = group.reduce((sum, message) => sum + messageTokens(message), 0)
    if (cost > left && newestFirst.length > 0) break
    left -= cost
    newestFirst.push(group)
  }
  while (newestFirst.length > 1 && newestFirst[newestFirst.length - 1][0].role !== 'user') newestFirst.pop()
  const messages: ModelMessage[] = [...newestFirst.reverse().flat(), ...callsSoFar]
  if (answerSoFar) messages.push({ role: 'assistant', content: answerSoFar })
  return messages
}

/** A message's estimated cost: its text, or the JSON of its parts (tool calls and results are sent as JSON). */
function messageTokens(message: ModelMessage): number {
  return estimateTokens(typeof message.content === 'string' ? message.content : JSON.stringify(message.content))
}

/**
 * The turns of the branch that leads to `turnId`, newest first: the turn, its parent, and
 * so on to the root (or, when `turnId` is not in the state, the latest branch). A turn's
 * parent precedes it in the log (a push may only name events that exist), so one backward
 * scan from the end finds them all, and stops when the caller does. A log where a parent
 * comes later (none the chat admits) is walked the whole way, as pathTo does.
 */
function* branchBackwards(state: ChatState, turnId: string): Generator<Turn> {
  const turns = state.turns
  let wanted: string | null = turnId
  let position = turns.length - 1
  let found = 0
  while (wanted !== null) {
    while (position >= 0 && turns[position].id !== wanted) position--
    if (position < 0) break
    const turn: Turn = turns[position]
    found++
    yield turn
    wanted = turn.kind === 'user' ? turn.parent : turn.for
    position--
  }
  if (wanted === null) return
  // Not found below: the message is not in the state, or a parent comes after its child.
  const rest = found === 0 ? latestBranch(turns) : pathTo(state, turnId)
  for (let i = rest.length - 1 - found; i >= 0; i--) yield rest[i]
}

/**
 * The text a generation's earlier attempts committed, as the chat's fold shows it (every
 * attempt's chunks in log order): exactly what a reader may have seen of this answer.
 * `history` is the fold of the log before the generation; `later` what the log holds after it.
 */
export function committedAnswer(history: ChatState, generation: ChatEvent, later: ChatEvent[]): string {
  const turn = committedTurn(history, generation, later)
  return turn ? answerText(turn) : ''
}

/** The steps of every kind a generation's attempts committed (text, reasoning, tool input and calls), folded as its answer. */
export function committedTurn(history: ChatState, generation: ChatEvent, later: ChatEvent[]): AnswerTurn | undefined {
  const ownSteps = later.filter((e) => STEP_TYPES.has(e.type) && (e.payload as { of?: string }).of === generation.id)
  const turn = foldChat([generation, ...ownSteps], history).turns.find((t) => t.id === generation.id)
  return turn?.kind === 'assistant' ? turn : undefined
}

const STEP_TYPES = new Set<ChatEvent['type']>(['chunk', 'reasoning', 'tool.input', 'tool.call'])

/**
 * The tool calls a generation shows so far, with what each did (their states), as model
 * messages: its earlier attempts' and, for a Continue, the stopped version's (the fold carries
 * them over, cut as the reader saw them). What a successor or a Continue tells the model before
 * it goes on, so it does not make a call again that was made (or, told it did not happen,
 * decides again). No text: that is the answer so far.
 */
export function callsSoFar(history: ChatState, generation: ChatEvent, later: ChatEvent[]): ModelMessage[] {
  const continues = generation.type === 'generate' ? generation.payload.continues : undefined
  const ofThis = (of: string | undefined) => of === generation.id || (continues !== undefined && of === continues)
  const own = later.filter(
    (e) =>
      (STEP_TYPES.has(e.type) && (e.payload as { of?: string }).of === generation.id) ||
      // A state the stopped version's call reached after the Continue was asked for (the fold shows it in both).
      (e.type === 'tool.state' && ofThis(e.payload.of)),
  )
  const turn = foldChat([generation, ...own], history).turns.find((t) => t.id === generation.id)
  if (turn?.kind !== 'assistant') return []
  return answerMessages({ ...turn, chunks: [], text: '', prefix: undefined })
}
