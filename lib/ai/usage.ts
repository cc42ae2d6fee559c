/**
 * Token counts when the provider gives none: an answer that was stopped (the aborted request
 * never reaches the provider's usage chunk) or a server that does not report usage. The model
 * was paid for the prompt it was sent and for every token it streamed until the abort, also
 * those past the reader's cut, so both are counted, with a real BPE tokenizer: o200k_base,
 * OpenAI's current encoding. Other models' tokenizers differ by some percent; characters ÷ 4
 * differs by far more on code and non-English text. Counted figures say so (`counted: true`).
 */
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base'
import type { ModelMessage } from 'ai'

export interface Usage {
  inputTokens?: number
  outputTokens?: number
  /** The app counted these; the provider reported nothing. */
  counted?: true
}

/** ChatML frames each message with about 4 tokens (role, start and end markers). */
const TOKENS_PER_MESSAGE = 4

/** Text a user typed may look like a special token (`<|endoftext|>`): it is counted as the plain text it is. */
const AS_PLAIN_TEXT = { disallowedSpecial: new Set<string>() }

export function countText(text: string): number {
  return text ? countTokens(text, AS_PLAIN_TEXT) : 0
}

/** The prompt as sent: the instructions and every message's text, each with its framing. */
export function countPrompt(instructions: string, messages: readonly ModelMessage[]): number {
  let tokens = countText(instructions) + TOKENS_PER_MESSAGE
  for (const message of messages) {
    const content = message.content
    const text =
      typeof content === 'string'
        ? content
        : content.map((part) => ('text' in part && typeof part.text === 'string' ? part.text : JSON.stringify(part))).join('')
    tokens += countText(text) + TOKENS_PER_MESSAGE
  }
  return tokens
}

/**
 * What an answer cost: the provider's figures where it reported them, each missing one counted.
 * `sent` is the prompt, unset when the call was never dispatched; `streamed` is every text the
 * model sent, cut or not.
 */
export function answerUsage(
  reported: { inputTokens?: number; outputTokens?: number } | undefined,
  sent: { instructions: string; messages: readonly ModelMessage[] } | undefined,
  streamed: string,
): Usage {
  if (!sent) return { inputTokens: 0, outputTokens: 0, counted: true } // never dispatched: nothing was sent, nothing billed
  const inputTokens = reported?.inputTokens
  const outputTokens = reported?.outputTokens
  if (inputTokens !== undefined && outputTokens !== undefined) return { inputTokens, outputTokens }
  return {
    inputTokens: inputTokens ?? countPrompt(sent.instructions, sent.messages),
    outputTokens: outputTokens ?? countText(streamed),
    counted: true,
  }
}
