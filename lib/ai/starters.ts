/**
 * The starter prompts on "/", each with what its answer shows. The offline model answers
 * each with exactly that (offline-model.test.ts checks), so a newcomer with no API key sees
 * the Markdown rendering (a numbered list, a fenced code block, a table, a poem) and an
 * answer's other parts: reasoning streamed before it, a tool call with its state.
 */
export interface Starter {
  title: string
  prompt: string
  shows: 'list' | 'code' | 'table' | 'poem'
  /** Parts the answer has besides its text, from the offline model. */
  parts?: ReadonlyArray<'reasoning' | 'tool'>
}

export const STARTERS: readonly Starter[] = [
  {
    title: 'Explain step by step',
    prompt: 'Explain, step by step, how cancelling a streaming AI response should work end to end.',
    shows: 'list',
  },
  {
    title: 'Write some code',
    prompt: 'Write a TypeScript debounce function with a cancel() method, and show how to use it.',
    shows: 'code',
  },
  { title: 'Compare in a table', prompt: 'Compare Server-Sent Events and WebSockets in a table.', shows: 'table' },
  { title: 'Something fun', prompt: 'Write a short poem about a stop button that really works.', shows: 'poem' },
  {
    title: 'Think it through',
    prompt: 'Think it through first, then list the steps: what should Stop do to a tool call already in flight?',
    shows: 'list',
    parts: ['reasoning'],
  },
  { title: 'Check my notes', prompt: 'Think first, then look up my saved notes and list them.', shows: 'list', parts: ['reasoning', 'tool'] },
]
