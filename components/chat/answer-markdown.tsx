'use client'
import { createContext, lazy, Suspense, useContext, type ReactNode } from 'react'

/**
 * Finished answers' Markdown as the chat page's server rendered it (app/c/[id]/finished-answers.tsx),
 * by answer id, each with the text it rendered: hydrating that markup parses no Markdown, and a
 * chat of finished answers never loads the Markdown module (figure 13, bench/README.md).
 */
export type RenderedAnswers = Readonly<Record<string, { text: string; body: ReactNode }>>

export const RenderedAnswersContext = createContext<RenderedAnswers>({})

const Markdown = lazy(() => import('../markdown').then((m) => ({ default: m.Markdown })))

/** Loads the Markdown module ahead of an answer that will need it (the reader is about to ask). */
export function preloadMarkdown(): void {
  void import('../markdown')
}

/**
 * An answer's text: the server's rendering while it is of this very text (a Stop the page
 * applied since, or "show the rest", makes another text), else Markdown rendered here, shown as
 * plain text for the moment its module takes to load.
 */
export function AnswerMarkdown({ id, text, streaming }: { id: string; text: string; streaming: boolean }) {
  const rendered = useContext(RenderedAnswersContext)[id]
  if (rendered && rendered.text === text && !streaming) return rendered.body
  return (
    <Suspense
      fallback={
        <div className="markdown">
          <p className="whitespace-pre-wrap">{text}</p>
        </div>
      }
    >
      <Markdown text={text} streaming={streaming} />
    </Suspense>
  )
}
